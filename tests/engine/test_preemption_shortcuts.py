"""The classical search's shortcut decides nothing: over random worlds (test_properties), where no
ClusterQueue of the tree could hold a reclaim candidate (``_reclaimable_queues``) and the
preemptor's own holds none, gathering finds no candidate either."""

from __future__ import annotations

from engine_worlds_support import World, play, worlds
from hypothesis import given, settings

from scheduler.engine import AdmissionEngine, CycleResult, WorkloadState
from scheduler.engine.candidates import own_pools
from scheduler.engine.preemption_classical import _reclaim_pools, _reclaimable_queues


def _check_shortcuts(engine: AdmissionEngine, before: dict[str, dict[str, int]], result: CycleResult) -> None:
    cluster_queues = engine.model.cluster_queues
    for workload in engine.workloads.values():
        if workload.state is not WorkloadState.PENDING or workload.cluster_queue not in cluster_queues:
            continue
        cq = cluster_queues[workload.cluster_queue]
        policy = cq.policies.preemption
        for flavor_name in {f for group in cq.groups for f in group.flavors}:
            fr = (flavor_name, "cpu")
            usage = {fr: sum(p.total(p.count).get("cpu", 0) for p in workload.pod_sets)}
            own = own_pools(cq, workload, [fr], policy.within_cluster_queue)
            reclaimable = _reclaimable_queues(cq.node, [fr], policy)
            pools = own + _reclaim_pools(cq, workload, usage, [fr], cluster_queues, policy, False)
            if not own and not reclaimable:
                assert not pools, "candidates beyond the ClusterQueues the shortcut counts"
            gathered = {id(pool.cluster_queue.node) for pool in pools} - {id(cq.node)}
            assert gathered <= {id(node) for node in reclaimable}, "a candidate in a ClusterQueue left out"


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_the_shortcut_rules_out_only_what_gathering_finds_empty(world: World) -> None:
    if world.fair_sharing:
        return  # the shortcuts are the classical search's
    play(world, _check_shortcuts)
