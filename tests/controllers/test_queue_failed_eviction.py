"""A victim whose eviction is refused keeps its quota and nodes; nothing admitted beside it may use them.

Within one cycle the engine releases a victim's quota when it decides the preemption, and the
rest of the cycle decides on that live quota tree: the preemptor takes what it needs, and another
ClusterQueue of the cohort may borrow what is left. If the victim's eviction write is then refused,
the server still counts the victim, so *every* admission of that cycle in the victim's cohort may
stand on quota that was never freed, not only the preemptor's. The chaos benchmark once counted
quota violations this way on a loaded machine. This test makes the sequence happen on purpose:
one low job fills the cohort, then a high-priority job (same ClusterQueue, needs a quarter) and a
borrowing job (the other ClusterQueue, needs half) arrive in one cycle, and the victim's eviction
meets a 409. Nodes are shared across quota trees, so the same holds for a gang of another tree
that a topology placement put on the victim's hosts (the second test).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fakeapi.fixtures import FakeApi
from queue_support import (
    NS,
    CommittedUsage,
    Reader,
    cluster_queue_doc,
    controller,
    gpu_node,
    is_admitted,
    kube,
    local_queue_doc,
    queued,
    seed_basics,
    tas_cluster_queue_doc,
    whole_host_gang,
)

from sandbox.apiserver.records import StoredEvent
from scheduler.api.topology_assignment import decode_topology_assignment
from tests.eventually import eventually

COHORT_CPU = 4


def seed(fake_api: FakeApi) -> None:
    """cq-a lends its whole quota to cq-b (nominal 0); the big job runs, the other two wait held."""
    seed_basics(fake_api)
    put = fake_api.server.seed
    put(cluster_queue_doc("cq-a", COHORT_CPU, preemption="LowerPriority", cohort="all"))
    put(cluster_queue_doc("cq-b", 0, preemption="LowerPriority", cohort="all"))
    put(local_queue_doc("lq-a", "cq-a"))
    put(local_queue_doc("lq-high", "cq-a", "Hold"))
    put(local_queue_doc("lq-b", "cq-b", "Hold"))
    put(queued("big", "lq-a", COHORT_CPU, "low"))
    put(queued("high", "lq-high", 1, "high"))
    put(queued("borrower", "lq-b", 2, "low"))


async def test_a_refused_eviction_blocks_every_admission_that_used_the_victims_quota(
    fake_api: FakeApi, reader: Reader
) -> None:
    seed(fake_api)
    usage = CommittedUsage()
    fake_api.server.store.observers.append(usage.observe)
    async with kube(fake_api) as client, controller(client) as process:
        await eventually(lambda: _admitted(reader, "big"), what="the big job's admission")
        big = await _workload(reader, "big")
        refused = fake_api.server.faults.fail(
            "patch", f"/workloads/{big['metadata']['name']}/status", code=409, message="injected conflict"
        )
        # both held queues released within one debounce window: one cycle sees both jobs
        process.built.queue.debounce = 1.0
        await client.patch("LocalQueue", "lq-high", {"spec": {"stopPolicy": "None"}}, NS)
        await client.patch("LocalQueue", "lq-b", {"spec": {"stopPolicy": "None"}}, NS)
        await eventually(lambda: refused.remaining == 0, what="the victim's eviction meeting the 409")
        process.built.queue.debounce = 0.02
        await eventually(lambda: _admitted(reader, "high"), what="the preemptor's admission after a retry")
        await eventually(lambda: _admitted(reader, "borrower"), what="the borrower's admission after a retry")
        big = await _workload(reader, "big")
    assert not (big.get("status") or {}).get("admission")  # preempted in the end
    assert usage.peak <= COHORT_CPU  # the server never counted more than the cohort has


async def _workload(reader: Reader, owner: str) -> dict[str, Any]:
    return next(w for w in await reader.workloads() if w["metadata"]["ownerReferences"][0]["name"] == owner)


async def _admitted(reader: Reader, owner: str) -> bool:
    return any(
        w["metadata"]["ownerReferences"][0]["name"] == owner and is_admitted(w) for w in await reader.workloads()
    )


# ------------------------------------------------------------------ nodes are shared across cohort trees

HOSTS = ("gpu-0", "gpu-1")


def seed_tas(fake_api: FakeApi) -> None:
    """Two hosts; cq-a's low gang takes both, cq-b (another quota tree) shares the same nodes."""
    seed_basics(fake_api, tas=True)
    put = fake_api.server.seed
    put(tas_cluster_queue_doc("cq-a", preemption="LowerPriority"))
    put(tas_cluster_queue_doc("cq-b", preemption="LowerPriority"))
    put(local_queue_doc("lq-a", "cq-a"))
    put(local_queue_doc("lq-high", "cq-a", "Hold"))
    put(local_queue_doc("lq-b", "cq-b", "Hold"))
    for host in HOSTS:
        put(gpu_node(host))
    put(whole_host_gang("victim", hosts=2, queue="lq-a", priority="low"))
    put(whole_host_gang("high", hosts=1, queue="lq-high", priority="high"))
    put(whole_host_gang("neighbour", hosts=1, queue="lq-b", priority="low"))


class PodsPerNode:
    """Pods the committed admissions place on each node, after every Workload write."""

    def __init__(self) -> None:
        self.placed: dict[str, list[str]] = {}
        self.peak = 0

    def observe(self, event: StoredEvent) -> None:
        if event.rtype.kind != "Workload":
            return
        name = str(event.obj["metadata"]["name"])
        admission = (event.obj.get("status") or {}).get("admission")
        self.placed.pop(name, None)
        if event.type != "DELETED" and admission:
            self.placed[name] = [
                node
                for assignment in admission["podSetAssignments"]
                for node in decode_topology_assignment(assignment["topologyAssignment"]).pod_nodes()
            ]
        per_node = Counter(node for nodes in self.placed.values() for node in nodes)
        self.peak = max(self.peak, max(per_node.values(), default=0))


async def test_a_refused_eviction_keeps_its_nodes_from_gangs_of_other_quota_trees(fake_api: FakeApi) -> None:
    seed_tas(fake_api)
    pods = PodsPerNode()
    fake_api.server.store.observers.append(pods.observe)
    async with kube(fake_api) as client, controller(client) as process:

        async def admitted(name: str) -> bool:
            return is_admitted(await client.get("Workload", name, NS))

        await eventually(lambda: admitted("victim"), what="the victim gang on both hosts")
        refused = fake_api.server.faults.fail("patch", "/workloads/victim/status", code=409, message="injected")
        process.built.queue.debounce = 1.0  # one cycle sees both released queues
        await client.patch("LocalQueue", "lq-high", {"spec": {"stopPolicy": "None"}}, NS)
        await client.patch("LocalQueue", "lq-b", {"spec": {"stopPolicy": "None"}}, NS)
        await eventually(lambda: refused.remaining == 0, what="the victim's eviction meeting the 409")
        process.built.queue.debounce = 0.02
        await eventually(lambda: admitted("high"), what="the preemptor's admission after a retry")
        await eventually(lambda: admitted("neighbour"), what="the other tree's gang after a retry")
        assert not await admitted("victim")
    assert pods.peak == 1  # one 8-GPU pod per 8-GPU host at every committed moment
