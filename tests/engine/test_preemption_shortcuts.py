"""The classical search's shortcuts decide nothing: over random worlds (test_properties), where no
ClusterQueue of the tree could hold a reclaim candidate (``_reclaimable_queues``) and the
preemptor's own holds none, gathering finds no candidate either; and where the quota would not fit
with all the search could take gone (``_beyond_reach``), no search over the gathered candidates
fits."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from engine_worlds_support import World, play, worlds
from hypothesis import given, settings

from scheduler.engine import AdmissionEngine, ClusterQueueInfo, CycleResult, WorkloadInfo, WorkloadState
from scheduler.engine.candidates import own_pools
from scheduler.engine.preemption_classical import (
    _beyond_reach,
    _borrowing_forbidden,
    _reclaim_pools,
    _reclaimable_queues,
    _under_nominal,
    classical_victims,
)
from scheduler.engine.quota import FlavorResource


def _pending_cpu_asks(
    engine: AdmissionEngine,
) -> Iterator[tuple[ClusterQueueInfo, WorkloadInfo, FlavorResource, dict[FlavorResource, int]]]:
    """Every pending workload's ask of cpu in each flavor of its ClusterQueue."""
    cluster_queues = engine.model.cluster_queues
    for workload in engine.workloads.values():
        if workload.state is not WorkloadState.PENDING or workload.cluster_queue not in cluster_queues:
            continue
        cq = cluster_queues[workload.cluster_queue]
        for flavor_name in {f for group in cq.groups for f in group.flavors}:
            fr = (flavor_name, "cpu")
            yield cq, workload, fr, {fr: sum(p.total(p.count).get("cpu", 0) for p in workload.pod_sets)}


def _check_shortcuts(engine: AdmissionEngine, before: dict[str, dict[str, int]], result: CycleResult) -> None:
    cluster_queues = engine.model.cluster_queues
    for cq, workload, fr, usage in _pending_cpu_asks(engine):
        policy = cq.policies.preemption
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
    _play_classical(world, _check_shortcuts)


class _AlwaysFits:
    """An ExtraFit that never refuses: the search decides on quota alone."""

    def remove(self, workload: WorkloadInfo) -> None:
        pass

    def restore(self, workload: WorkloadInfo) -> None:
        pass

    def fits(self) -> bool:
        return True


def _check_reach(engine: AdmissionEngine, before: dict[str, dict[str, int]], result: CycleResult) -> None:
    cluster_queues = engine.model.cluster_queues
    for cq, workload, fr, usage in _pending_cpu_asks(engine):
        policy = cq.policies.preemption
        if usage[fr] <= cq.node.available(fr):
            continue  # the oracle is asked only of contested resources
        reclaimable = _reclaimable_queues(cq.node, [fr], policy)
        only_borrowing = _borrowing_forbidden(policy) and not _under_nominal(cq.node, [fr])
        if not _beyond_reach(cq, workload, usage, policy, reclaimable, only_borrowing):
            continue
        # the full search, as quota alone decides it: an extra fit that always holds skips the bound
        found = classical_victims(cq, workload, usage, [fr], cluster_queues, _AlwaysFits())
        assert found is None, "the bound ruled out a search that finds victims"


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_beyond_reach_rules_out_only_searches_that_find_nobody(world: World) -> None:
    _play_classical(world, _check_reach)


def _play_classical(
    world: World, check: Callable[[AdmissionEngine, dict[str, dict[str, int]], CycleResult], None]
) -> None:
    if not world.fair_sharing:  # the shortcut and the bound are the classical search's
        play(world, check)
