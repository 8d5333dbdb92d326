"""Preemption candidates, gathered per ClusterQueue and priority level before any is visited.

Kueue's candidates for a preemptor are the admitted workloads that use a contested
(flavor, resource) and that the preemption policy allows: in the preemptor's own ClusterQueue by
``withinClusterQueue``, in borrowing ClusterQueues of the cohort by ``reclaimWithinCohort`` (or
``borrowWithinCohort``). Both policies decide by priority, so whole priority levels of
``AdmittedWorkloads`` are in or out at once. A ``CandidatePool`` is one such level; it can say
what its candidates use in total without listing them when every workload of the level uses a
contested resource, which is what lets the search rule out a hopeless preemption cheaply.

Kueue's classical preemption (preemption/classical/hierarchical_preemption.go) also sorts each
candidate into a variant: its own ClusterQueue's, a hierarchical reclaim (the preemptor's share of
the tree holds it, so it may take back lent quota whatever the borrowing policy), or a
priority-based reclaim that is allowed only without borrowing or also while borrowing. The
variant decides the search order (hierarchical candidates, then priority-based ones, then the
preemptor's own), which searches may take the candidate, and the reason recorded for its eviction.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from scheduler.engine.admitted import PriorityLevel
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.quota import FlavorResource, QuotaNode
from scheduler.engine.workloads import WorkloadInfo

# Kueue's preemption variants (classical/hierarchical_preemption.go preemptionVariant)
WITHIN_CLUSTER_QUEUE = 0
HIERARCHICAL_RECLAIM = 1
RECLAIM_WITHOUT_BORROWING = 2
RECLAIM_WHILE_BORROWING = 3


def variant_rank(variant: int) -> int:
    """Kueue lists hierarchical candidates first, then priority-based ones, then its own queue's."""
    if variant == HIERARCHICAL_RECLAIM:
        return 0
    if variant == WITHIN_CLUSTER_QUEUE:
        return 2
    return 1


# eq=False: candidates compare by identity. A search's ``list.remove`` would otherwise call the
# generated field-by-field __eq__, which runs interpreted under mypyc.
@dataclass(slots=True, init=False, eq=False)
class Candidate:
    workload: WorkloadInfo
    cluster_queue: ClusterQueueInfo
    same_queue: bool
    variant: int
    lca: QuotaNode | None  # the cohort where the preemptor's and the candidate's paths meet

    # mypyc: CONTRIBUTING.md
    def __init__(
        self, workload: WorkloadInfo, cluster_queue: ClusterQueueInfo, variant: int, lca: QuotaNode | None
    ) -> None:
        self.workload = workload
        self.cluster_queue = cluster_queue
        self.same_queue = variant == WITHIN_CLUSTER_QUEUE
        self.variant = variant
        self.lca = lca


def ordering(candidate: Candidate) -> tuple[bool, int, float, str]:
    """Kueue's candidate order: other ClusterQueues first, lower priority, newest admitted, UID."""
    return (candidate.same_queue, candidate.workload.priority, *_newest_first(candidate))


def _newest_first(candidate: Candidate) -> tuple[float, str]:
    """The order within one priority level (``ordering``'s tail)."""
    return (-candidate.workload.admitted_at, candidate.workload.uid)


def satisfies_policy(policy: str, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool:
    """Kueue's SatisfiesPreemptionPolicy for one candidate."""
    if policy == "LowerPriority":
        return candidate.priority < preemptor.priority
    if policy == "LowerOrNewerEqualPriority":
        return candidate.priority < preemptor.priority or (
            candidate.priority == preemptor.priority and candidate.queue_order_time > preemptor.queue_order_time
        )
    return policy == "Any"


def uses(workload: WorkloadInfo, contested: list[FlavorResource]) -> bool:
    usage = workload.admission.usage if workload.admission else {}
    return any(usage.get(fr, 0) > 0 for fr in contested)


@dataclass(slots=True, init=False)
class CandidatePool:
    """The candidates of one ClusterQueue at one priority level."""

    cluster_queue: ClusterQueueInfo
    level: PriorityLevel
    variant: int
    lca: QuotaNode | None
    contested: list[FlavorResource]
    check: Callable[[WorkloadInfo], bool] | None  # a per-workload condition the level does not settle

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        cluster_queue: ClusterQueueInfo,
        level: PriorityLevel,
        variant: int,
        lca: QuotaNode | None,
        contested: list[FlavorResource],
        check: Callable[[WorkloadInfo], bool] | None = None,
    ) -> None:
        self.cluster_queue = cluster_queue
        self.level = level
        self.variant = variant
        self.lca = lca
        self.contested = contested
        self.check = check

    def _whole(self) -> bool:
        return self.check is None and self.level.used_by_all(self.contested)

    def _admits(self, workload: WorkloadInfo) -> bool:
        return uses(workload, self.contested) and (self.check is None or self.check(workload))

    def candidates(self) -> Iterator[Candidate]:
        """The pool's candidates in Kueue's order: newest admitted first, then UID."""
        cq, variant, lca = self.cluster_queue, self.variant, self.lca
        whole = self._whole()
        for workload in self.level.newest_first():
            if whole or self._admits(workload):
                yield Candidate(workload, cq, variant, lca)

    def has_candidates(self) -> bool:
        return self._whole() or next(self.candidates(), None) is not None

    def usage(self) -> dict[FlavorResource, int]:
        """What the pool's candidates use together (the level's own total when all are candidates)."""
        if self._whole():
            return self.level.usage
        totals: dict[FlavorResource, int] = {}
        for workload in self.level.workloads.values():
            if workload.admission is not None and self._admits(workload):
                for fr, amount in workload.admission.usage.items():
                    totals[fr] = totals.get(fr, 0) + amount
        return totals


def in_order(pools: list[CandidatePool]) -> Iterator[Candidate]:
    """Every candidate of ``pools`` in Kueue's order (``ordering``), produced lazily.

    Pools come in (variant's rank, priority) order; pools of one priority from several
    ClusterQueues are merged by admission time. A search that stops after its first few
    victims never looks at the rest.
    """
    groups: dict[tuple[int, int], list[CandidatePool]] = {}
    for pool in pools:
        groups.setdefault((variant_rank(pool.variant), pool.level.priority), []).append(pool)
    for key in sorted(groups):
        members = groups[key]
        if len(members) == 1:
            yield from members[0].candidates()
        else:
            yield from heapq.merge(*(pool.candidates() for pool in members), key=_newest_first)


def listed(pools: list[CandidatePool]) -> list[Candidate]:
    """Every candidate of ``pools``, in Kueue's order."""
    return list(in_order(pools))


def policy_levels(cq: ClusterQueueInfo, policy: str, priority: int) -> list[PriorityLevel]:
    """The priority levels of ``cq`` whose workloads ``policy`` lets a preemptor of ``priority`` take."""
    admitted = cq.admitted
    if policy == "LowerPriority":
        return admitted.levels_below(priority)
    if policy == "LowerOrNewerEqualPriority":
        return admitted.levels_up_to(priority)
    if policy == "Any":
        return admitted.levels()
    return []  # Never (or a policy Kueue does not know): nobody


def priority_pools(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    contested: list[FlavorResource],
    policy: str,
    variant: int,
    lca: QuotaNode | None = None,
) -> list[CandidatePool]:
    """``cq``'s candidates that ``policy`` allows, one pool of ``variant`` per priority level."""
    pools: list[CandidatePool] = []
    for level in policy_levels(cq, policy, preemptor.priority):
        if not level.used_by_any(contested):
            continue
        check: Callable[[WorkloadInfo], bool] | None = None
        if policy == "LowerOrNewerEqualPriority" and level.priority == preemptor.priority:

            def check(w: WorkloadInfo) -> bool:
                return satisfies_policy(policy, preemptor, w) and w is not preemptor

        elif preemptor.key in level.workloads:  # asked about a workload already admitted

            def check(w: WorkloadInfo) -> bool:
                return w is not preemptor

        pools.append(CandidatePool(cq, level, variant, lca, contested, check))
    return pools


def own_pools(
    cq: ClusterQueueInfo, preemptor: WorkloadInfo, contested: list[FlavorResource], policy: str
) -> list[CandidatePool]:
    """Candidates in the preemptor's own ClusterQueue, by ``withinClusterQueue``."""
    return priority_pools(cq, preemptor, contested, policy, WITHIN_CLUSTER_QUEUE)


def borrowing_queue_pools(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    contested: list[FlavorResource],
    cluster_queues: dict[str, ClusterQueueInfo],
    policy: str,
) -> list[CandidatePool]:
    """Candidates in the other ClusterQueues of the cohort tree that borrow a contested resource
    (fair sharing's findCandidates)."""
    if cq.node.parent is None or policy == "Never":
        return []
    pools: list[CandidatePool] = []
    for leaf in cq.node.root().leaves():
        if leaf is cq.node:
            continue
        other = cluster_queues.get(leaf.name)
        if other is None or not any(leaf.is_borrowing(fr) for fr in contested):
            continue  # only ClusterQueues over their nominal quota can be reclaimed from
        pools.extend(priority_pools(other, preemptor, contested, policy, RECLAIM_WITHOUT_BORROWING))
    return pools


def usage_by_queue(pools: list[CandidatePool]) -> list[tuple[ClusterQueueInfo, dict[FlavorResource, int]]]:
    """What all of ``pools``' candidates use, summed per ClusterQueue."""
    per_queue: dict[int, tuple[ClusterQueueInfo, dict[FlavorResource, int]]] = {}
    for pool in pools:
        entry = per_queue.get(id(pool.cluster_queue))
        if entry is None:
            entry = per_queue[id(pool.cluster_queue)] = (pool.cluster_queue, {})
        totals = entry[1]
        for fr, amount in pool.usage().items():
            totals[fr] = totals.get(fr, 0) + amount
    return list(per_queue.values())
