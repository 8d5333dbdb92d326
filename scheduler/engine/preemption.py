"""Preemption (Kueue pkg/scheduler/preemption): who may be evicted so a workload fits.

Candidates are admitted workloads that use a contested (flavor, resource): in the preemptor's own
ClusterQueue as ``withinClusterQueue`` allows, and in the other ClusterQueues of its cohort tree
that use more than their nominal quota, as ``reclaimWithinCohort`` (and ``borrowWithinCohort``)
allow. Without fair sharing the classical search decides (``preemption_classical``), with it the
fair-sharing strategies (``preemption_fair``); both remove candidates until the preemptor fits and
then fill back what they can do without (``preemption_search``).
"""

from __future__ import annotations

from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.preemption_classical import classical_victims
from scheduler.engine.preemption_fair import fair_sharing_victims
from scheduler.engine.preemption_search import ExtraFit, Victim, remove_workload, restore_workload
from scheduler.engine.quota import FlavorResource
from scheduler.engine.workloads import WorkloadInfo

__all__ = ["ExtraFit", "Victim", "find_victims", "simulate_removal", "undo_removal"]


def simulate_removal(workloads: list[WorkloadInfo], cluster_queues: dict[str, ClusterQueueInfo]) -> None:
    """Take admitted ``workloads`` out of the quota tree (Kueue's SimulateWorkloadUsageRemoval)."""
    for workload in workloads:
        cq = cluster_queues.get(workload.cluster_queue or "")
        if cq is not None and workload.admission is not None:
            remove_workload(cq, workload)


def undo_removal(workloads: list[WorkloadInfo], cluster_queues: dict[str, ClusterQueueInfo]) -> None:
    """Put back what ``simulate_removal`` took out."""
    for workload in reversed(workloads):
        cq = cluster_queues.get(workload.cluster_queue or "")
        if cq is not None and workload.admission is not None:
            restore_workload(cq, workload)


def _contested(cq: ClusterQueueInfo, usage: dict[FlavorResource, int]) -> list[FlavorResource]:
    return [fr for fr, amount in usage.items() if amount > cq.node.available(fr)]


def find_victims(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    usage: dict[FlavorResource, int],
    cluster_queues: dict[str, ClusterQueueInfo],
    *,
    fair_sharing: bool,
    extra_fit: ExtraFit | None = None,
    contested: list[FlavorResource] | None = None,
) -> list[Victim] | None:
    """The victims to evict so ``preemptor`` fits with ``usage``, or None when none will do.
    ``contested``: the resources of ``usage`` beyond what ``cq`` has available, where the caller
    knows them already."""
    if contested is None:
        contested = _contested(cq, usage)
    if not contested and extra_fit is None:
        return []
    if not contested:
        contested = list(usage)
    if fair_sharing:
        return fair_sharing_victims(cq, preemptor, usage, contested, cluster_queues, extra_fit)
    return classical_victims(cq, preemptor, usage, contested, cluster_queues, extra_fit)
