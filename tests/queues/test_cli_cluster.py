"""`trainyard queues ...` against a cluster: the fake API server over real HTTP, the real client.

The command runs in a thread (it has its own event loop, as on a terminal) while the server
runs on the test's loop.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from fakeapi.fixtures import FakeApi

from scheduler.kube import KubeClient
from tests.builders import namespace as build_namespace
from tests.queues.support import FIXTURES
from trainyard.cli.main import main
from webhooks.visibility import VISIBILITY_KEY, EngineSource, VisibilityService, add_visibility_routes
from webhooks.visibility_auth import Authenticator, Guard, allow_users, fixed_token


def _documents() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") == "List":
                found.extend(document["items"])
            elif document:
                found.append(document)
    return found


async def _load_cluster(fake_api: FakeApi) -> None:
    api = await fake_api.api_client()
    try:
        kube = KubeClient(api)
        namespaces = {d["metadata"]["namespace"] for d in _documents() if d["metadata"].get("namespace")}
        for namespace in sorted(namespaces - {"default"}):
            await kube.create(build_namespace(namespace))
        for document in _documents():
            status = document.pop("status", None)
            created = await kube.create(document)
            if status:
                metadata = created["metadata"]
                await kube.patch(
                    created["kind"], metadata["name"], {"status": status}, metadata.get("namespace"), status=True
                )
    finally:
        await api.close()


async def _queues(*argv: str) -> tuple[int, str]:
    def run() -> int:
        return main(["queues", *argv])

    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = await asyncio.to_thread(run)
    return code, out.getvalue()


async def test_list_reads_the_cluster(fake_api: FakeApi) -> None:
    await _load_cluster(fake_api)
    code, out = await _queues("list", "--kubeconfig", str(fake_api.kubeconfig), "--output", "json")
    assert code == 0
    queues = {q["name"]: q for q in json.loads(out)["clusterQueues"]}
    assert queues["team-b"]["resources"][0]["usage"] == "4"  # b-running's admission, read from its status
    assert queues["team-a"]["pending"] == 3


async def test_pending_falls_back_to_local_when_the_cluster_has_no_visibility_api(fake_api: FakeApi) -> None:
    await _load_cluster(fake_api)
    code, out = await _queues("pending", "team-a", "--kubeconfig", str(fake_api.kubeconfig), "--output", "json")
    assert code == 0
    answer = json.loads(out)
    assert answer["source"].startswith("computed locally by the engine: the visibility API did not answer")
    # the API server stamps creationTimestamp (to the second) and uid itself, so ties fall to the uid
    items = answer["items"]
    assert sorted(i["name"] for i in items) == ["a-big", "a-first", "a-other"]
    assert [i["positionInClusterQueue"] for i in items] == [0, 1, 2]
    assert next(i for i in items if i["name"] == "a-other")["positionInLocalQueue"] == 0


@pytest.fixture
async def front(fake_api: FakeApi, tmp_path: Path) -> AsyncIterator[tuple[Path, VisibilityService]]:
    """The cluster as the aggregator shows it: the visibility API beside the API server's own paths."""
    from scheduler.engine import AdmissionEngine

    token = fixed_token(fake_api.server.token or "", user="admin")
    service = VisibilityService(EngineSource(AdmissionEngine()), Guard(Authenticator(token), allow_users("admin")))
    app = web.Application()
    app[VISIBILITY_KEY] = service
    add_visibility_routes(app)
    session = aiohttp.ClientSession()

    async def forward(request: web.Request) -> web.StreamResponse:
        async with session.request(
            request.method,
            fake_api.url + request.rel_url.path_qs,
            headers={k: v for k, v in request.headers.items() if k.lower() != "host"},
            data=await request.read(),
        ) as answer:
            return web.Response(body=await answer.read(), status=answer.status, content_type=answer.content_type)

    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    config = yaml.safe_load(fake_api.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{runner.addresses[0][1]}"
    kubeconfig = tmp_path / "front-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    try:
        yield kubeconfig, service
    finally:
        await runner.cleanup()
        await session.close()


async def test_pending_uses_the_visibility_api_where_the_cluster_serves_it(
    fake_api: FakeApi, front: tuple[Path, VisibilityService]
) -> None:
    kubeconfig, service = front
    await _load_cluster(fake_api)
    # the service's engine: the same objects, as the controller would hold them
    from tests.queues.support import fixture_state

    service.source = EngineSource(fixture_state().engine)
    code, out = await _queues("pending", "team-a", "--kubeconfig", str(kubeconfig), "--output", "json")
    assert code == 0
    answer = json.loads(out)
    assert answer["source"].startswith("the cluster's visibility API")
    assert [(i["name"], i["positionInClusterQueue"]) for i in answer["items"]] == [
        ("a-first", 0),
        ("a-big", 1),
        ("a-other", 2),
    ]
    assert answer["items"][0]["requests"] == {"nvidia.com/gpu": "8"}  # filled from the local evaluation


async def test_set_quota_patches_with_the_resource_version(fake_api: FakeApi) -> None:
    await _load_cluster(fake_api)
    kubeconfig = str(fake_api.kubeconfig)
    argv = ["set-quota", "team-a", "--flavor", "h100", "--resource", "nvidia.com/gpu", "--nominal", "16"]
    code, out = await _queues(*argv, "--kubeconfig", kubeconfig)
    assert code == 0
    assert "not applied" in out
    code, out = await _queues(*argv, "--kubeconfig", kubeconfig, "--yes")
    assert code == 0
    assert "patched" in out
    api = await fake_api.api_client()
    try:
        cq = await KubeClient(api).get("ClusterQueue", "team-a")
    finally:
        await api.close()
    quota = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert str(quota["nominalQuota"]) == "16"
    assert str(quota["borrowingLimit"]) == "4"
    patches = [r for r in fake_api.server.requests if r.method == "PATCH" and "clusterqueues" in r.path]
    assert len(patches) == 1


async def test_a_stale_resource_version_is_refused_with_advice(fake_api: FakeApi) -> None:
    from trainyard.cli.errors import UserError
    from trainyard.cli.queues.cluster_side import patch_cluster_queue

    await _load_cluster(fake_api)
    api = await fake_api.api_client()
    try:
        cq = await KubeClient(api).get("ClusterQueue", "team-b")
    finally:
        await api.close()
    stale = str(int(cq["metadata"]["resourceVersion"]) - 1)
    groups = cq["spec"]["resourceGroups"]
    with pytest.raises(UserError, match="changed since it was read"):
        await asyncio.to_thread(patch_cluster_queue, fake_api.kubeconfig, None, "team-b", stale, groups)


async def test_describe_reads_the_cluster(fake_api: FakeApi) -> None:
    await _load_cluster(fake_api)
    argv = ("describe", "a-first", "--namespace", "team-a", "--no-estimate")
    code, out = await _queues(*argv, "--kubeconfig", str(fake_api.kubeconfig), "--output", "json")
    assert code == 0
    story = json.loads(out)
    assert story["clusterQueue"] == "team-a"
    assert [f["flavor"] for f in story["explanation"]["flavorsTried"]] == ["h100", "a100"]
    # the API server stamps creationTimestamp itself: the position is the one `pending` gives
    code, out = await _queues("pending", "team-a", "--kubeconfig", str(fake_api.kubeconfig), "--output", "json")
    order = [i["name"] for i in json.loads(out)["items"]]
    assert story["positionInClusterQueue"] == order.index("a-first")
    reads = [r for r in fake_api.server.requests if r.method == "GET" and "workloads" in r.path]
    assert reads


async def test_what_if_reads_the_cluster(fake_api: FakeApi) -> None:
    await _load_cluster(fake_api)
    argv = ("what-if", "quota:team-a:h100:nvidia.com/gpu=16", "--seed", "3", "--processes", "1")
    code, out = await _queues(*argv, "--kubeconfig", str(fake_api.kubeconfig), "--output", "json")
    assert code == 0
    report = json.loads(out)
    team_a = report["variants"]["quota:team-a:h100:nvidia.com/gpu=16"]["per_queue"]["team-a"]
    assert team_a["jobs"]["base"] >= 3  # the three pending workloads read from the cluster
    assert team_a["wait_p50_s"]["variant"] < team_a["wait_p50_s"]["base"]


async def test_what_if_on_a_cluster_rehearses_admitted_pending_and_recent_arrivals(fake_api: FakeApi) -> None:
    """A recent arrival that already finished is still an arrival: it is replayed, and the report
    says how much of the cluster the rehearsal took."""
    await _load_cluster(fake_api)
    api = await fake_api.api_client()
    try:
        kube = KubeClient(api)
        finished = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "done-an-hour-ago", "namespace": "team-a"},
            "spec": {
                "queueName": "main",
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}
                        },
                    }
                ],
            },
        }
        await kube.create(finished)
        condition = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done"}
        condition["lastTransitionTime"] = "2026-01-01T00:00:00Z"
        await kube.patch("Workload", "done-an-hour-ago", {"status": {"conditions": [condition]}}, "team-a", status=True)
    finally:
        await api.close()
    argv = ("what-if", "quota:team-a:h100:nvidia.com/gpu=16", "--seed", "3", "--processes", "1")
    code, out = await _queues(*argv, "--kubeconfig", str(fake_api.kubeconfig), "--output", "json")
    assert code == 0
    taken = json.loads(out)["notes"][0]
    counts = re.fullmatch(
        r"rehearsed (\d+) admitted workloads \(their remaining run\), (\d+) pending and (\d+) arrivals of the "
        r"last 24 h replayed",
        taken,
    )
    assert counts is not None, taken
    admitted, pending, arrivals = (int(n) for n in counts.groups())
    # the five fixture Workloads hold or wait now; all six, the finished one too, arrived just now
    assert (admitted + pending, arrivals) == (5, 6)
