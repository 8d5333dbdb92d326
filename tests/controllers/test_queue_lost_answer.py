"""An admission whose answer was lost, and whose Workload cannot be read back, keeps its quota.

The write may have landed: the server then counts the admission although the controller never
heard so. If the engine took the (stale) cache's word that the Workload is still pending, it
would release that quota and admit another job over it. Here the answer of the admission is cut
after the server commits it, every read of the Workload fails, and the Workload watch is stalled,
so nothing tells the controller; the first job's queue is then held, which leaves the second job
free to take the quota if, and only if, the engine released it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fakeapi.fixtures import FakeApi
from queue_support import (
    NS,
    CommittedUsage,
    Reader,
    cluster_queue_doc,
    condition,
    controller,
    is_admitted,
    kube,
    local_queue_doc,
    queued,
    seed_basics,
    stall_workload_watches,
)

from tests.eventually import eventually

QUOTA = 2


def seed(fake_api: FakeApi) -> None:
    """A held ClusterQueue with room for one of two jobs, each in a LocalQueue of its own."""
    seed_basics(fake_api)
    put = fake_api.server.seed
    put(cluster_queue_doc("cq", QUOTA, stop="Hold"))
    for job, priority in (("first", "high"), ("second", "low")):  # the first job goes first (no preemption here)
        put(local_queue_doc(f"lq-{job}", "cq"))
        put(queued(job, f"lq-{job}", QUOTA, priority))


async def test_an_admission_that_may_have_landed_unseen_keeps_its_quota(fake_api: FakeApi, reader: Reader) -> None:
    seed(fake_api)
    usage = CommittedUsage()
    fake_api.server.store.observers.append(usage.observe)
    async with kube(fake_api) as client, controller(client) as process:
        queue = process.built.queue
        cache = process.manager.cache
        await eventually(
            lambda: (
                len(cache.list("Workload")) == 2 and all(condition(w, "QuotaReserved") for w in cache.list("Workload"))
            ),
            what="both Workloads pending in the controller's cache (the ClusterQueue is held)",
        )
        assert stall_workload_watches(fake_api) >= 1
        lost = fake_api.faults.lose_answers("patch", "/workloads/")
        unreadable = fake_api.faults.fail("get", "/workloads/", code=503, times=10_000)

        await client.patch("ClusterQueue", "cq", {"spec": {"stopPolicy": "None"}})
        await eventually(lambda: _admitted(reader, "first"), what="the first job's admission on the server")
        assert lost.remaining == 0
        # the write's retry met a 409 against itself, and every read-back attempt failed
        await eventually(lambda: unreadable.remaining <= 10_000 - 5, what="a read-back that failed")

        await client.patch("LocalQueue", "lq-first", {"spec": {"stopPolicy": "Hold"}}, NS)
        cycles = queue.cycles
        await eventually(lambda: queue.cycles >= cycles + 2, what="cycles after the first queue was held")
        await asyncio.sleep(0.3)
        assert not await _admitted(reader, "second")
        assert queue.mirror.unsure(_key(reader_workloads=await reader.workloads(), owner="first"))
    assert usage.peak == QUOTA


def _key(*, reader_workloads: list[dict[str, Any]], owner: str) -> str:
    workload = next(w for w in reader_workloads if w["metadata"]["ownerReferences"][0]["name"] == owner)
    return f"{NS}/{workload['metadata']['name']}"


async def _admitted(reader: Reader, owner: str) -> bool:
    return any(
        w["metadata"]["ownerReferences"][0]["name"] == owner and is_admitted(w) for w in await reader.workloads()
    )
