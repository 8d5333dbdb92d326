"""The dashboard over HTTP without a browser: files, quota changes, fragmentation, bad input."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from builders import (
    ClusterQueueBuilder,
    LocalQueueBuilder,
    NodeBuilder,
    ResourceFlavorBuilder,
    TopologyBuilder,
    WorkloadBuilder,
)

from dashboard import DashboardData, DashboardServer, StaticQueues
from scheduler.queues import cluster_queue_summaries
from trainyard.cli.dashboard import files_data
from trainyard.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "queues" / "fixtures"
BLOCK = "cloud.example.com/block"


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as opened:
        yield opened


async def _get(session: aiohttp.ClientSession, url: str, status: int = 200) -> str:
    async with session.get(url) as answer:
        assert answer.status == status, await answer.text()
        assert "Server-Timing" in answer.headers
        return await answer.text()


async def test_files_queue_numbers_are_the_queries_and_every_page_answers(session: aiohttp.ClientSession) -> None:
    data = files_data([FIXTURES], strict=False, quota=False)
    server = DashboardServer(data)
    await server.start()
    try:
        page = await _get(session, f"{server.url}/queues")
        rows = re.findall(
            r'<tr data-cq="([^"]+)".*?<td class="admitted">(\d+)</td><td class="pending">(\d+)</td>', page
        )
        state = await data.state()
        assert state is not None
        expected = [(s.name, str(s.admitted), str(s.pending)) for s in cluster_queue_summaries(state)]
        assert rows == expected
        for path in ("/jobs", "/jobs?status=Pending", "/topology", "/simulations", "/queues?cq=team-b"):
            await _get(session, server.url + path)
        fragment = await session.get(f"{server.url}/jobs", headers={"X-Fragment": "content"})
        assert not (await fragment.text()).startswith("<!doctype")
        assert await _get(session, f"{server.url}/jobs/default/no-such-job", status=404)
        async with session.post(f"{server.url}/queues/team-a/quota", data={"nominal": "1"}) as refused:
            assert refused.status == 403
    finally:
        await server.stop()


async def test_a_quota_change_is_checked_shown_then_applied_to_the_file(
    tmp_path: Path, session: aiohttp.ClientSession
) -> None:
    objects = tmp_path / "objects"
    shutil.copytree(FIXTURES, objects)
    server = DashboardServer(files_data([objects], strict=False, quota=True))
    await server.start()
    form = {"flavor": "h100", "resource": "nvidia.com/gpu", "nominal": "12"}
    try:
        async with session.post(f"{server.url}/queues/team-a/quota", data={**form, "nominal": "-1"}) as refused:
            assert refused.status == 422
            assert "team-a" in await refused.text()
        async with session.post(f"{server.url}/queues/team-a/quota", data=form) as plan:
            text = await plan.text()
            assert plan.status == 200
            assert "apply" in text
            assert "12" in text
        assert "nominalQuota: 12" not in (objects / "queues.yaml").read_text(), "shown, not applied"
        elsewhere = {"Origin": "http://elsewhere.example"}
        confirmed = {**form, "confirm": "yes"}
        async with session.post(f"{server.url}/queues/team-a/quota", data=confirmed, headers=elsewhere) as forged:
            assert forged.status == 403, "another site's form cannot change a quota"
        async with session.post(f"{server.url}/queues/team-a/quota", data={**form, "confirm": "yes"}) as applied:
            assert "edited in place" in await applied.text()
        assert "nominalQuota: 12" in (objects / "queues.yaml").read_text()
        assert "a shared pool on top of the teams" in (objects / "queues.yaml").read_text(), "comments kept"
        page = await _get(session, f"{server.url}/queues?cq=team-a")
        assert "/ 12</span>" in page or "/ 12," in page
    finally:
        await server.stop()


def _fragmented_cluster() -> StaticQueues:
    """Four 8-GPU nodes in two blocks; a 6-GPU pod admitted, a 2 × 8-GPU gang waiting for quota."""
    nodes = [
        NodeBuilder(f"node-{i}")
        .labels(**{BLOCK: f"b{i // 2}", "kubernetes.io/hostname": f"node-{i}"})
        .capacity(nvidia_com_gpu="8", cpu="32")
        .obj()
        for i in range(4)
    ]
    objects = [
        TopologyBuilder("default", BLOCK, "kubernetes.io/hostname").obj(),
        ResourceFlavorBuilder("gpu").topology("default").obj(),
        ClusterQueueBuilder("team-a").quota("gpu", "nvidia.com/gpu", 16).obj(),
        LocalQueueBuilder("default", "team-a").cluster_queue("team-a").obj(),
        *nodes,
    ]
    workloads = [
        WorkloadBuilder("small", "team-a").queue("default").created(0).pod_set(count=1, nvidia_com_gpu="6").obj(),
        WorkloadBuilder("gang", "team-a").queue("default").created(1).pod_set(count=2, nvidia_com_gpu="8").obj(),
    ]
    return StaticQueues(objects, workloads)


async def test_fragmentation_is_the_free_gpus_the_smallest_pending_gang_cannot_use(
    session: aiohttp.ClientSession,
) -> None:
    queues = _fragmented_cluster()
    state = queues.load(now=time.time())
    gang, small_pod = state.engine.workload("team-a/gang"), state.engine.workload("team-a/small")
    assert gang is not None
    assert small_pod is not None
    assert gang.admission is None
    small = small_pod.admission
    assert small is not None
    (node,) = {n for gang in small.placements.values() for p in gang.pod_sets for n in p.nodes}
    server = DashboardServer(DashboardData("test", queues=queues))
    await server.start()
    try:
        page = await _get(session, f"{server.url}/topology")
        blocks = dict(re.findall(r'data-domain="(b\d)" data-fragmented="(\d+)"', page))
        held = f"b{int(node[-1]) // 2}"
        assert blocks == {held: "2", ("b1" if held == "b0" else "b0"): "0"}
        assert "26 free (2 fragmented)" in page
        assert "2 pod(s) × 8 GPUs (team-a/gang)" in page
        nodes = await _get(session, f"{server.url}/topology?path={held}&job=team-a/small")
        assert f'data-node="{node}"' in nodes
        assert re.search(rf'class="domain highlight node" data-node="{node}"', nodes)
    finally:
        await server.stop()


async def test_a_broken_series_file_is_named_on_the_page(tmp_path: Path, session: aiohttp.ClientSession) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "series.json").write_text("{not json")
    server = DashboardServer(DashboardData("test", simulations=[tmp_path]))
    await server.start()
    try:
        page = await _get(session, f"{server.url}/simulations")
        assert f"{tmp_path}/run/series.json: cannot be read as JSON" in page
        async with session.get(f"{server.url}/simulations/data?run=nothing") as missing:
            assert missing.status == 404
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "name what to show: --kubeconfig PATH (a cluster), --objects DIR (files) or --local"),
        (["--local", "--port", "70000"], "--port 70000 is not a TCP port"),
        (["--local", "--sim", "/no/such/dir"], "/no/such/dir: no such file or directory"),
        (["--local", "--context", "x"], "--context needs --kubeconfig PATH"),
        (["--kubeconfig", "/no/such/kubeconfig"], "--kubeconfig /no/such/kubeconfig: no such file"),
    ],
)
def test_bad_input_is_one_clear_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dashboard", *args]) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("trainyard dashboard: ")
    assert message in stderr
    assert "Traceback" not in stderr


async def test_a_pending_jobs_page_tells_its_story_and_estimates_its_start_on_request(
    session: aiohttp.ClientSession,
) -> None:
    server = DashboardServer(DashboardData("test", queues=_fragmented_cluster()))
    await server.start()
    try:
        page = await _get(session, f"{server.url}/jobs/team-a/gang")
        assert "insufficient unused quota for nvidia.com/gpu in flavor gpu" in page
        assert 'id="estimate-link"' in page
        estimated = await _get(session, f"{server.url}/jobs/team-a/gang?estimate=1")
        # the 6-GPU pod runs its default hour; then quota and nodes hold the gang
        assert re.search(r'<dd id="estimate">in about 1h \(every workload runs', estimated), estimated[-2000:]
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["serve", "webhook", "--self-signed", "--dashboard-port", "8765"],
            "use it with `trainyard serve` (no SERVICE)",
        ),
        (["serve", "--self-signed", "--dashboard-port", "99999"], "--dashboard-port 99999 is not a TCP port"),
        (["sandbox", "up", "--dashboard-port", "99999"], "--dashboard-port 99999 is not a TCP port"),
    ],
)
def test_the_dashboard_options_of_serve_and_sandbox_refuse_bad_input(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    stderr = capsys.readouterr().err
    assert message in stderr
    assert "Traceback" not in stderr
