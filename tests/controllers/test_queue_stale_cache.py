"""A Workload watch that falls behind never lets the controller undo its own admission.

The chaos benchmark once counted a quota violation: the controller admitted a Workload, the watch
that would have echoed the write was cut, and a moment later a higher-priority job preempted it.
The eviction read the Workload from the cache, which still showed it pending; taking that as "the
server shows no admission to take away", the engine released the quota while the server still
counted it, and admitted the preemptor over it. The controller now reads its own write's answer
until the cache catches up. This test stalls the Workload watch and replays that sequence (on
the old code it never converges: every write went out at the stale revision and was refused).
"""

from __future__ import annotations

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
    trainjob,
)

from tests.eventually import eventually

QUOTA = 2


def seed(fake_api: FakeApi) -> None:
    """One ClusterQueue (held), two LocalQueues (the high one held too), a job in each."""
    seed_basics(fake_api)
    put = fake_api.server.seed
    put(cluster_queue_doc("cq", QUOTA, preemption="LowerPriority", stop="Hold"))
    put(local_queue_doc("lq", "cq"))
    put(local_queue_doc("lq-high", "cq", "Hold"))
    put(trainjob("low", cpu=QUOTA, priority="low"))
    put(queued("high", "lq-high", QUOTA, "high"))


async def test_a_preemption_behind_a_stalled_watch_never_overcommits(fake_api: FakeApi, reader: Reader) -> None:
    seed(fake_api)
    usage = CommittedUsage()
    fake_api.server.store.observers.append(usage.observe)
    async with kube(fake_api) as client, controller(client) as process:
        cache = process.manager.cache
        await eventually(lambda: len(cache.list("Workload")) == 2, what="both Workloads in the controller's cache")
        await eventually(
            lambda: all(condition(w, "QuotaReserved") for w in cache.list("Workload")),
            what="both pending (the queue is held)",
        )
        assert stall_workload_watches(fake_api) >= 1  # from here the cache no longer sees Workload writes

        await client.patch("ClusterQueue", "cq", {"spec": {"stopPolicy": "None"}})
        await eventually(lambda: _admitted(reader, "low"), what="the low job's admission")
        cached_low = next(w for w in cache.list("Workload") if _owner(w) == "low")
        assert not is_admitted(cached_low)  # the cache is behind the server: the condition for the bug

        await client.patch("LocalQueue", "lq-high", {"spec": {"stopPolicy": "None"}}, NS)
        await eventually(lambda: _admitted(reader, "high"), what="the preemptor's admission")
        low = next(w for w in await reader.workloads() if _owner(w) == "low")
    assert not (low.get("status") or {}).get("admission")
    preempted = condition(low, "Preempted")
    assert preempted is not None
    assert preempted["status"] == "True"
    assert usage.peak == QUOTA  # never both at once on the server


async def _admitted(reader: Reader, owner: str) -> bool:
    return any(_owner(w) == owner and is_admitted(w) for w in await reader.workloads())


def _owner(workload: dict[str, Any]) -> str:
    return str(workload["metadata"]["ownerReferences"][0]["name"])
