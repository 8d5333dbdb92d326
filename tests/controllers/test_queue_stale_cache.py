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
    KUEUE,
    NS,
    Reader,
    condition,
    controller,
    eventually,
    is_admitted,
    kube,
    runtime_doc,
    trainjob,
)

from simulations.sandbox.apiserver.records import StoredEvent

QUOTA = 2


class CommittedUsage:
    """Admitted cpu after every committed Workload write, read from the store (no watch to stall)."""

    def __init__(self) -> None:
        self.holding: dict[str, int] = {}
        self.peak = 0

    def observe(self, event: StoredEvent) -> None:
        if event.rtype.kind != "Workload":
            return
        name = str(event.obj["metadata"]["name"])
        admission = (event.obj.get("status") or {}).get("admission")
        self.holding.pop(name, None)
        if event.type != "DELETED" and admission:
            self.holding[name] = sum(int(a["resourceUsage"]["cpu"]) for a in admission["podSetAssignments"])
        self.peak = max(self.peak, sum(self.holding.values()))


def seed(fake_api: FakeApi) -> None:
    """One ClusterQueue (held), two LocalQueues (the high one held too), a job in each."""
    put = fake_api.server.seed
    put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    put(runtime_doc())
    put({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    resources = [{"name": "cpu", "nominalQuota": str(QUOTA)}]
    put(
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "stopPolicy": "Hold",
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": resources}]}
                ],
            },
        }
    )
    for queue, stop in (("lq", "None"), ("lq-high", "Hold")):
        put(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": queue, "namespace": NS},
                "spec": {"clusterQueue": "cq", "stopPolicy": stop},
            }
        )
    for name, value in (("low", 10), ("high", 1000)):
        put({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value})
    put(trainjob("low", cpu=QUOTA, priority="low"))
    high = trainjob("high", cpu=QUOTA, priority="high")
    high["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "lq-high"
    put(high)


def stall_workload_watches(fake_api: FakeApi) -> int:
    stalled = 0
    for subscription in fake_api.server.store.subscriptions:
        if subscription.rtype.kind == "Workload":
            subscription.stalled = True
            stalled += 1
    return stalled


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
