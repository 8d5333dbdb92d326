"""ownerReference garbage collection on the fake API server, seen through watches as a controller sees it."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from builders import jobset
from fakeapi.fixtures import FakeApi
from sandbox_support import config_map, job, kube, owner_ref, pod

from sandbox.apiserver import FakeApiServer
from scheduler.kube import KubeApiError, KubeClient, WatchEvent, load_api_client
from tests.eventually import eventually


async def _names(client: KubeClient, kind: str) -> set[str]:
    return {item["metadata"]["name"] for item in (await client.list(kind, "default")).items}


async def _record(client: KubeClient, kind: str, since: str, into: list[WatchEvent]) -> None:
    stream = client.watch(kind, "default", resource_version=since, timeout_seconds=30)
    async with contextlib.aclosing(stream):
        async for event in stream:
            into.append(event)


async def _family(client: KubeClient) -> tuple[dict[str, Any], dict[str, Any]]:
    """A JobSet owning a Job owning two pods (the shape the JobSet controller builds)."""
    owner = await client.create(jobset("train"))
    child = await client.create(job("train-workers-0", owners=[owner_ref(owner)]))
    for index in range(2):
        await client.create(pod(f"train-workers-0-{index}", owners=[owner_ref(child)]))
    return owner, child


async def test_background_deletion_removes_dependents_recursively_as_watch_events(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        owner, child = await _family(client)
        await client.create(pod("unrelated"))
        since = str(fake_api.store.resource_version)
        pod_events: list[WatchEvent] = []
        job_events: list[WatchEvent] = []
        watchers = [
            asyncio.create_task(_record(client, "Pod", since, pod_events)),
            asyncio.create_task(_record(client, "Job", since, job_events)),
        ]
        try:
            await client.delete("JobSet", "train", "default")
            await eventually(lambda: len(pod_events) == 2 and len(job_events) == 1, what="DELETED events")
        finally:
            for task in watchers:
                task.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
        assert await _names(client, "Job") == set()
        assert await _names(client, "Pod") == {"unrelated"}
    assert [(e.type, e.object["metadata"]["name"]) for e in job_events] == [("DELETED", "train-workers-0")]
    assert sorted((e.type, e.object["metadata"]["name"]) for e in pod_events) == [
        ("DELETED", "train-workers-0-0"),
        ("DELETED", "train-workers-0-1"),
    ]
    assert fake_api.store.collected == 3
    assert owner["metadata"]["uid"] != child["metadata"]["uid"]


async def test_orphan_propagation_keeps_dependents_and_drops_the_reference(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        await _family(client)
        await client.delete("JobSet", "train", "default", propagation_policy="Orphan")
        left = await client.get("Job", "train-workers-0", "default")
        assert "ownerReferences" not in left["metadata"]
        assert await _names(client, "Pod") == {"train-workers-0-0", "train-workers-0-1"}


async def test_a_batch_v1_job_orphans_its_pods_by_default_as_the_real_server(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        await _family(client)
        await client.delete("Job", "train-workers-0", "default")
        assert await _names(client, "Pod") == {"train-workers-0-0", "train-workers-0-1"}
        orphan = await client.get("Pod", "train-workers-0-0", "default")
        assert "ownerReferences" not in orphan["metadata"]
        # with Background the pods go too
        child = await client.create(job("again"))
        await client.create(pod("again-0", owners=[owner_ref(child)]))
        await client.delete("Job", "again", "default", propagation_policy="Background")
        assert "again-0" not in await _names(client, "Pod")


async def test_a_dependent_with_another_live_owner_survives(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        first = await client.create(config_map("first"))
        second = await client.create(config_map("second"))
        shared = pod("shared", owners=[owner_ref(first), owner_ref(second, controller=False)])
        await client.create(shared)
        await client.delete("ConfigMap", "first", "default")
        kept = await client.get("Pod", "shared", "default")
        assert [r["name"] for r in kept["metadata"]["ownerReferences"]] == ["second"]
        await client.delete("ConfigMap", "second", "default")
        assert "shared" not in await _names(client, "Pod")


async def test_foreground_deletes_dependents_before_the_owner(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        owner, _ = await _family(client)
        since = int(fake_api.store.resource_version)
        await client.delete("JobSet", "train", "default", propagation_policy="Foreground")
    deleted = [(e.rtype.kind, e.obj["metadata"]["name"]) for e in fake_api.store.history if e.resource_version > since]
    assert deleted[-1] == ("JobSet", "train")
    assert deleted.index(("Job", "train-workers-0")) > deleted.index(("Pod", "train-workers-0-0"))
    assert owner["metadata"]["name"] == "train"


async def test_an_owner_held_by_a_finalizer_keeps_its_dependents_until_it_goes(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        owner = jobset("held")
        owner["metadata"]["finalizers"] = ["trainyard.io/test"]
        created = await client.create(owner)
        child = config_map("child")
        child["metadata"]["ownerReferences"] = [owner_ref(created)]
        await client.create(child)
        await client.delete("JobSet", "held", "default")
        assert "child" in await _names(client, "ConfigMap")
        await client.patch("JobSet", "held", {"metadata": {"finalizers": None}}, "default")
        assert "child" not in await _names(client, "ConfigMap")


async def test_an_unknown_propagation_policy_is_refused(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        await client.create(config_map("cm"))
        with pytest.raises(KubeApiError) as refused:
            await client.delete("ConfigMap", "cm", "default", propagation_policy="Sometimes")
    assert refused.value.status == 422
    assert "propagationPolicy" in refused.value.message


async def test_dangling_dependents_are_collected_when_the_server_is_asked_to(tmp_path: Path) -> None:
    async with FakeApiServer(collect_dangling=True) as server:
        configuration = server.write_kubeconfig(tmp_path / "kubeconfig")
        api_client = await load_api_client(configuration)
        try:
            client = KubeClient(api_client)
            owner = await client.create(config_map("owner"))
            kept = config_map("kept")
            kept["metadata"]["ownerReferences"] = [owner_ref(owner)]
            await client.create(kept)
            dangling = config_map("dangling")
            dangling["metadata"]["ownerReferences"] = [owner_ref(owner) | {"uid": "no-such-uid"}]
            answer = await client.create(dangling)
            assert answer["metadata"]["name"] == "dangling"  # the create itself succeeds, as on a real server
            assert await _names(client, "ConfigMap") == {"owner", "kept"}
        finally:
            await api_client.close()
    assert server.store.collected == 1


async def test_made_up_owner_uids_are_kept_by_default(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        orphan = config_map("orphan")
        orphan["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "made-up", "controller": True}
        ]
        await client.create(orphan)
        assert await _names(client, "ConfigMap") == {"orphan"}
