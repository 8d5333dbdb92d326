"""Node failure end to end, through every controller against the sandbox API server.

A TrainJob's gang runs on a topology-placed node (one pod per whole host, kept in one block).
The node turns NotReady under it. The queue controller hands the failure to the engine, which
places the pod again on the other host of the same block; the Workload's ``topologyAssignment``
changes; the runner fails the pod on the dead node, the Job replaces it, and the ungater pins the
replacement to the new host (it never pins it back to the dead one), where it runs to the end.
When the block has no room left, the gang is evicted with Kueue's reason ``NodeFailures`` and
admitted again elsewhere.
"""

from __future__ import annotations

from typing import Any

from sandbox.embedded import LocalCluster
from scheduler.api.topology_assignment import decode_topology_assignment
from scheduler.kube import KubeClient
from tests.eventually import eventually
from trainyard.cli.cluster_demo.seed import TourJob, cluster_objects, trainjob

TEAM = "team-a"


async def workload_of(client: KubeClient, trainjob_name: str) -> dict[str, Any] | None:
    for workload in (await client.list("Workload", TEAM)).items:
        if any(ref.get("name") == trainjob_name for ref in workload["metadata"].get("ownerReferences") or ()):
            return workload
    return None


def placed_nodes(workload: dict[str, Any] | None) -> list[str]:
    admission = ((workload or {}).get("status") or {}).get("admission") or {}
    nodes: list[str] = []
    for assignment in admission.get("podSetAssignments") or ():
        if assignment.get("topologyAssignment"):
            nodes.extend(decode_topology_assignment(assignment["topologyAssignment"]).pod_nodes())
    return nodes


def condition(document: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for found in ((document or {}).get("status") or {}).get("conditions") or ():
        if found.get("type") == kind and found.get("status") == "True":
            return dict(found)
    return None


async def running_pods(client: KubeClient, trainjob_name: str) -> dict[str, str]:
    """Pod name -> node, for the job's pods that run now."""
    pods = (await client.list("Pod", TEAM, label_selector=f"jobset.sigs.k8s.io/jobset-name={trainjob_name}")).items
    return {
        p["metadata"]["name"]: str(p["spec"].get("nodeName"))
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running"
    }


async def fail_node(client: KubeClient, name: str) -> None:
    node = await client.get("Node", name)
    conditions = [{"type": "Ready", "status": "False", "reason": "KubeletStopped"}]
    await client.patch("Node", name, {"status": {"conditions": conditions}}, status=True)
    assert node["metadata"]["name"] == name


async def test_a_failed_node_moves_the_pod_within_its_block() -> None:
    async with LocalCluster(cluster_objects()) as cluster:
        client = cluster.client
        await cluster.start_controllers()
        await cluster.start_standins()
        await client.create(trainjob(TourJob("solo", TEAM, nodes=1, priority=None, run_seconds=4.0)))

        async def running() -> dict[str, str] | None:
            return await running_pods(client, "solo") or None

        first = await eventually(running, what="the pod running on its placed node")
        workload = await workload_of(client, "solo")
        (dead,) = placed_nodes(workload)
        assert list(first.values()) == [dead]

        await fail_node(client, dead)
        block = dead.rsplit("-h", 1)[0]

        async def replaced() -> dict[str, Any] | None:
            current = await workload_of(client, "solo")
            nodes = placed_nodes(current)
            return current if nodes and dead not in nodes else None

        moved = await eventually(replaced, what="the gang placed again without the failed node")
        (spare,) = placed_nodes(moved)
        assert spare.startswith(block)
        assert spare != dead
        assert condition(moved, "Admitted") is not None
        assert condition(moved, "Evicted") is None

        async def runs_on_spare() -> dict[str, str] | None:
            pods = await running_pods(client, "solo")
            return pods if pods and set(pods.values()) == {spare} else None

        await eventually(runs_on_spare, what="the replacement pod running on the new node")

        async def complete() -> dict[str, Any] | None:
            return condition(await client.get("TrainJob", "solo", TEAM), "Complete")

        await eventually(complete, what="the TrainJob complete after the move")
        pods = (await client.list("Pod", TEAM, label_selector="jobset.sigs.k8s.io/jobset-name=solo")).items
        on_dead = [p for p in pods if p["spec"].get("nodeName") == dead]
        assert all(p["status"]["phase"] == "Failed" for p in on_dead)  # nothing ran on the dead node again


async def test_a_failed_node_under_a_full_block_evicts_the_gang_and_requeues_it() -> None:
    async with LocalCluster(cluster_objects()) as cluster:
        client = cluster.client
        await cluster.start_controllers()
        await cluster.start_standins()
        await client.create(trainjob(TourJob("pair", TEAM, nodes=2, priority=None, run_seconds=30.0)))

        async def both_running() -> dict[str, str] | None:
            pods = await running_pods(client, "pair")
            return pods if len(pods) == 2 else None

        await eventually(both_running, what="the gang running on its block")
        held = placed_nodes(await workload_of(client, "pair"))
        await fail_node(client, held[0])

        # The eviction is read from its Event and the requeue count, which stay: the Evicted
        # condition itself turns False as soon as the gang is admitted again, which on a busy
        # machine can happen between two polls.
        async def evicted() -> dict[str, Any] | None:
            for event in (await client.list("Event", TEAM)).items:
                if event.get("reason") == "Evicted" and event["involvedObject"].get("kind") == "Workload":
                    return dict(event)
            return None

        eviction = await eventually(evicted, what="the gang evicted")
        assert held[0] in str(eviction.get("message")), eviction
        requeued = await workload_of(client, "pair")
        assert ((requeued or {}).get("status") or {}).get("requeueState", {}).get("count", 0) >= 1, requeued

        async def elsewhere() -> list[str] | None:
            current = await workload_of(client, "pair")
            nodes = placed_nodes(current) if condition(current, "Admitted") else []
            return nodes if nodes and not set(nodes) & set(held) else None

        moved = await eventually(elsewhere, what="the gang admitted again on the other block")
        assert {n.rsplit("-h", 1)[0] for n in moved} != {n.rsplit("-h", 1)[0] for n in held}
