"""ClusterQueue and LocalQueue status as Kueue writes it, read back with the official client, and
written at most once per batch period however busy the queue (issue 32)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from fakeapi.fixtures import FakeApi
from queue_support import (
    NS,
    Reader,
    cluster_queue_doc,
    controller,
    kube,
    local_queue_doc,
    seed_basics,
    seed_queues,
    trainjob,
)

from sandbox.apiserver.records import StoredEvent
from scheduler.controllers.queueing import queue_status
from tests.eventually import eventually


async def cluster_queue(reader: Reader, name: str) -> dict[str, Any]:
    answer: Any = await asyncio.to_thread(
        reader.custom.get_cluster_custom_object, "kueue.x-k8s.io", "v1beta2", "clusterqueues", name
    )
    return dict(answer)


async def local_queue(reader: Reader, name: str) -> dict[str, Any]:
    answer: Any = await asyncio.to_thread(
        reader.custom.get_namespaced_custom_object, "kueue.x-k8s.io", "v1beta2", NS, "localqueues", name
    )
    return dict(answer)


def counts(document: dict[str, Any]) -> tuple[Any, Any, Any]:
    status = document.get("status") or {}
    return status.get("pendingWorkloads"), status.get("reservingWorkloads"), status.get("admittedWorkloads")


def active(document: dict[str, Any]) -> tuple[str, str, str]:
    found = next(c for c in document["status"]["conditions"] if c["type"] == "Active")
    return found["status"], found["reason"], found["message"]


async def test_cluster_queue_and_local_queue_status_carry_counts_usage_and_active(
    fake_api: FakeApi, reader: Reader
) -> None:
    seed_queues(fake_api, cpu=2)
    for name in ("first", "second"):
        fake_api.server.seed(trainjob(name, nodes=2, cpu=1))  # 2 cpu each: one fits, one waits
    async with kube(fake_api) as client, controller(client):
        cq = await eventually(
            lambda: _with_counts(reader, cluster_queue, "cq", (1, 1, 1)), timeout=15, what="ClusterQueue status"
        )
        lq = await eventually(
            lambda: _with_counts(reader, local_queue, "lq", (1, 1, 1)), timeout=15, what="LocalQueue status"
        )
    reserved = [{"name": "default", "resources": [{"name": "cpu", "total": "2", "borrowed": "0"}]}]
    assert cq["status"]["flavorsReservation"] == reserved
    assert cq["status"]["flavorsUsage"] == reserved
    assert active(cq) == ("True", "Ready", "Can admit new workloads")
    assert lq["status"]["flavorsReservation"] == [{"name": "default", "resources": [{"name": "cpu", "total": "2"}]}]
    assert lq["status"]["flavorsUsage"] == lq["status"]["flavorsReservation"]
    assert active(lq) == ("True", "Ready", "Can submit new workloads to localQueue")


async def test_one_queues_status_write_does_not_hold_back_the_others(
    fake_api: FakeApi, reader: Reader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queue's own status write echoes back as a change of its input kinds, and asks for no
    cycle: the other queues' status must not wait for one that never comes, nor for the fallback
    look. Nothing is queued and no resync is due, so no later cycle would come to release them."""
    monkeypatch.setattr(queue_status, "_NOT_READY_FALLBACK", 3600.0)
    seed_queues(fake_api, cpu=2)
    names = [f"lq-{index}" for index in range(12)]
    for name in names:
        fake_api.server.seed(local_queue_doc(name, "cq"))
    async with kube(fake_api) as client, controller(client) as process:
        process.built.queue.resync_period = 3600.0  # set before the first term starts
        await eventually(lambda: _with_counts(reader, cluster_queue, "cq", (0, 0, 0)), timeout=15, what="cq status")
        for name in names:
            await eventually(lambda n=name: _with_counts(reader, local_queue, n, (0, 0, 0)), timeout=15, what=name)


async def _with_counts(reader: Reader, read: Any, name: str, wanted: tuple[int, int, int]) -> dict[str, Any] | None:
    document: dict[str, Any] = await read(reader, name)
    return document if counts(document) == wanted else None


async def test_an_inactive_cluster_queue_says_why_with_kueues_reason(fake_api: FakeApi, reader: Reader) -> None:
    seed_basics(fake_api)
    missing_flavor = cluster_queue_doc("cq", 4)
    missing_flavor["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "h100"  # no such ResourceFlavor
    fake_api.server.seed(missing_flavor)
    fake_api.server.seed(local_queue_doc("lq", "cq"))
    fake_api.server.seed(local_queue_doc("parked", "cq", stop="Hold"))
    async with kube(fake_api) as client, controller(client):
        cq = await eventually(lambda: _with_active(reader, cluster_queue, "cq"), timeout=15, what="Active")
        lq = await eventually(lambda: _with_active(reader, local_queue, "lq"), timeout=15, what="LQ Active")
        parked = await eventually(lambda: _with_active(reader, local_queue, "parked"), timeout=15, what="Hold")
    assert active(cq) == (
        "False",
        "FlavorNotFound",
        "Can't admit new workloads: ResourceFlavor 'h100' does not exist.",
    )
    assert active(lq) == ("False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    assert active(parked) == ("False", "Stopped", "LocalQueue is stopped")


async def _with_active(reader: Reader, read: Any, name: str) -> dict[str, Any] | None:
    document: dict[str, Any] = await read(reader, name)
    return (
        document if any(c["type"] == "Active" for c in (document.get("status") or {}).get("conditions") or []) else None
    )


class StatusWrites:
    """Every committed write of a ClusterQueue's status, with the loop time it landed."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def observe(self, event: StoredEvent) -> None:
        if event.rtype.kind == "ClusterQueue" and event.type == "MODIFIED":
            self.times.append(asyncio.get_running_loop().time())


async def test_a_busy_queue_writes_its_status_at_most_once_per_batch_period(fake_api: FakeApi, reader: Reader) -> None:
    seed_basics(fake_api)
    fake_api.server.seed(cluster_queue_doc("cq", 40))
    fake_api.server.seed(local_queue_doc("lq", "cq"))
    writes = StatusWrites()
    fake_api.server.store.observers.append(writes.observe)
    async with kube(fake_api) as client, controller(client) as process:
        process.built.queue_status.batch_period = 0.5
        await eventually(lambda: _with_counts(reader, cluster_queue, "cq", (0, 0, 0)), timeout=15, what="first")
        started = asyncio.get_running_loop().time()
        for index in range(30):  # a burst of arrivals, each admitted by its own cycles
            fake_api.server.seed(trainjob(f"job-{index}", nodes=1, cpu=1))
            await asyncio.sleep(0.02)
        await eventually(lambda: _with_counts(reader, cluster_queue, "cq", (0, 30, 30)), timeout=30, what="all")
        ended = asyncio.get_running_loop().time()
    during = [t for t in writes.times if t >= started]
    # 30 arrivals and 30 admissions, yet one write per half second (and the last one after it)
    assert len(during) <= (ended - started) / 0.5 + 2, (len(during), ended - started)
    assert all(b - a >= 0.45 for a, b in itertools.pairwise(during)), during


async def test_the_queue_status_writes_do_not_wake_the_admission_engine(fake_api: FakeApi, reader: Reader) -> None:
    """A status write echoes back as a ClusterQueue change: it must not rebuild the engine or ask
    for a cycle (nothing admission reads changed)."""
    seed_queues(fake_api, cpu=2)
    async with kube(fake_api) as client, controller(client) as process:
        await eventually(lambda: _with_counts(reader, cluster_queue, "cq", (0, 0, 0)), timeout=15, what="status")
        compiled = process.built.queue.engine.cluster_queue("cq")
        await client.patch("ClusterQueue", "cq", {"status": {"pendingWorkloads": 7}}, None, status=True)
        await eventually(lambda: _with_counts(reader, cluster_queue, "cq", (7, 0, 0)), timeout=5, what="the edit")
        # level-triggered: the controller puts its own figure back (after the batch period)
        await eventually(lambda: _with_counts(reader, cluster_queue, "cq", (0, 0, 0)), timeout=15, what="healed")
        # and the engine kept its compiled ClusterQueue: no re-apply, no rebuild for a status echo
        assert process.built.queue.engine.cluster_queue("cq") is compiled
