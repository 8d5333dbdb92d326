"""Classical preemption (Kueue pkg/scheduler/preemption/preemption.go ``classicalPreemptions`` and
preemption/classical/): which admitted workloads to evict, without fair sharing.

Candidates from other ClusterQueues are gathered walking up the preemptor's cohort tree, one
level at a time, from the subtrees it has not seen yet, skipping every ClusterQueue and cohort
within its nominal quota on the contested resources. While the preemptor's share of the tree
(its own quota, then each cohort on its way up) holds what it asks, the candidates found have a
hierarchical advantage: ``reclaimWithinCohort`` alone decides. Above that, ``borrowWithinCohort``
decides too: a candidate of lower priority, under ``maxPriorityThreshold``, may be evicted while
the preemptor borrows; any other only when it ends within its nominal quota.

The search tries "borrowing allowed" and "within nominal" in Kueue's order (borrowing first,
unless ``borrowWithinCohort`` is off and no hierarchical candidate exists), and passes over a
candidate whose ClusterQueue, or a cohort between it and the meeting point of the two paths, is
back within nominal quota by the time the search reaches it.
"""

from __future__ import annotations

from scheduler.api.kueue import ClusterQueuePreemption
from scheduler.engine.admitted import PriorityLevel
from scheduler.engine.candidates import (
    HIERARCHICAL_RECLAIM,
    RECLAIM_WHILE_BORROWING,
    RECLAIM_WITHOUT_BORROWING,
    WITHIN_CLUSTER_QUEUE,
    Candidate,
    CandidatePool,
    own_pools,
    policy_levels,
    priority_pools,
)
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.preemption_search import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    ExtraFit,
    Victim,
    fits,
    search,
    victim,
)
from scheduler.engine.quota import FlavorResource, QuotaNode
from scheduler.engine.workloads import WorkloadInfo

_REASONS = {
    WITHIN_CLUSTER_QUEUE: IN_CLUSTER_QUEUE,
    HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
    RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


def classical_victims(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    usage: dict[FlavorResource, int],
    contested: list[FlavorResource],
    cluster_queues: dict[str, ClusterQueueInfo],
    extra_fit: ExtraFit | None,
) -> list[Victim] | None:
    policy = cq.policies.preemption
    reclaimable = _reclaimable_queues(cq.node, contested, policy)
    borrowing_forbidden = _borrowing_forbidden(policy)
    # At or over nominal without borrowWithinCohort, Kueue searches only with borrowing, where
    # no priority-based candidate is valid: gather the hierarchical ones alone.
    only_borrowing = borrowing_forbidden and not _under_nominal(cq.node, contested)
    if extra_fit is None and _beyond_reach(cq, preemptor, usage, policy, reclaimable, only_borrowing):
        return None  # (most of the preemption oracle's questions end here, before any gathering)
    own = own_pools(cq, preemptor, contested, policy.within_cluster_queue)
    if not own and not reclaimable:
        return None  # nobody to take: what the search would find after gathering no pools
    others = (
        _reclaim_pools(cq, preemptor, usage, contested, cluster_queues, policy, only_borrowing) if reclaimable else []
    )

    def still_valid(candidate: Candidate) -> bool:
        return candidate.same_queue or _over_nominal_up_to_meeting_point(candidate, contested)

    # (every pool of another ClusterQueue holds a candidate: a level is pooled only when one of
    # its workloads uses a contested resource, and reclaimWithinCohort has no per-workload rule)
    attempts: tuple[bool, ...]
    if not others or only_borrowing:
        attempts = (True,)
    elif borrowing_forbidden and all(p.variant != HIERARCHICAL_RECLAIM for p in others):
        attempts = (False, True)
    else:
        attempts = (True, False)
    for allow_borrowing in attempts:
        allowed = others if not allow_borrowing else [p for p in others if p.variant != RECLAIM_WITHOUT_BORROWING]
        chosen = search(cq, usage, allowed + own, allow_borrowing, extra_fit, still_valid)
        if chosen is not None:
            return [victim(c, _REASONS[c.variant], preemptor) for c in chosen]
    return None


def _beyond_reach(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    usage: dict[FlavorResource, int],
    policy: ClusterQueuePreemption,
    reclaimable: list[QuotaNode],
    only_borrowing: bool,
) -> bool:
    """Whether no search ``classical_victims`` would make can fit the preemptor's quota, told
    without gathering a candidate: each search could at most take every workload of the levels
    of its own ClusterQueue ``withinClusterQueue`` allows, and all that some ClusterQueues of the
    tree use. Removal only frees quota, so when that does not fit, no set of candidates does.

    The search with borrowing takes from the ClusterQueues that could hold a hierarchical
    candidate (none when the walk reaches no level where the preemptor has the advantage), and,
    with ``borrowWithinCohort``, a priority-based one; without ``only_borrowing``, a search
    within nominal quota may take from every ClusterQueue beyond its nominal quota."""
    levels = policy_levels(cq, policy.within_cluster_queue, preemptor.priority)
    hierarchical = [] if _no_hierarchical_level(cq.node, usage) else reclaimable
    with_borrowing = hierarchical if only_borrowing or _borrowing_forbidden(policy) else reclaimable
    if _fits_with_gone(cq, usage, levels, with_borrowing, True):
        return False
    return only_borrowing or not _fits_with_gone(cq, usage, levels, reclaimable, False)


def _fits_with_gone(
    cq: ClusterQueueInfo,
    usage: dict[FlavorResource, int],
    levels: list[PriorityLevel],
    leaves: list[QuotaNode],
    allow_borrowing: bool,
) -> bool:
    """Would ``usage`` fit ``cq`` with the workloads of its ``levels`` and all that ``leaves``
    use gone (only the resources of ``usage`` are taken out: ``fits`` reads no other)?"""
    taken: list[tuple[QuotaNode, FlavorResource, int]] = []
    for fr in usage:
        own = 0
        for level in levels:
            own += level.usage.get(fr, 0)
        if own > 0:
            taken.append((cq.node, fr, own))
        for leaf in leaves:
            amount = leaf.usage.get(fr, 0)
            if amount > 0:
                taken.append((leaf, fr, amount))
    for node, fr, amount in taken:
        node.remove_usage(fr, amount)
    try:
        return fits(cq, usage, allow_borrowing)
    finally:
        for node, fr, amount in reversed(taken):
            node.add_usage(fr, amount)


def _no_hierarchical_level(node: QuotaNode, usage: dict[FlavorResource, int]) -> bool:
    """Whether ``_reclaim_pools`` finds no level where the preemptor has the advantage: the
    cohort above ``node`` is the root, and ``node``'s own quota does not hold ``usage``."""
    parent = node.parent
    if parent is None or parent.parent is not None:
        return False  # (deeper trees: a cohort on the way up may hold it)
    return any(node.borrowing_with(fr, amount) for fr, amount in usage.items())


def _borrowing_forbidden(policy: ClusterQueuePreemption) -> bool:
    borrow = policy.borrow_within_cohort
    return borrow is None or borrow.policy == "Never"


def _reclaimable_queues(
    node: QuotaNode, contested: list[FlavorResource], policy: ClusterQueuePreemption
) -> list[QuotaNode]:
    """The other ClusterQueues of the tree that could hold a reclaim candidate: only those beyond
    their nominal quota on a contested resource are gathered (``_Gathering.subtree``)."""
    if node.parent is None or policy.reclaim_within_cohort == "Never":
        return []
    return [leaf for leaf in node.root().leaves() if leaf is not node and not _within_nominal(leaf, contested)]


def _within_nominal(node: QuotaNode, contested: list[FlavorResource]) -> bool:
    """Kueue's IsWithinNominalInResources: no contested resource used beyond the subtree's quota."""
    usage, quota = node.usage, node.subtree
    return all(usage.get(fr, 0) <= quota.get(fr, 0) for fr in contested)


def _under_nominal(node: QuotaNode, contested: list[FlavorResource]) -> bool:
    """Strictly below nominal quota on every contested resource (queueUnderNominalInResourcesNeedingPreemption)."""
    usage, nominal = node.usage, node.nominal
    return all(usage.get(fr, 0) < nominal.get(fr, 0) for fr in contested)


def _over_nominal_up_to_meeting_point(candidate: Candidate, contested: list[FlavorResource]) -> bool:
    """Kueue's candidateIsValid for another ClusterQueue's candidate: that queue, and every
    cohort between it and the lowest common ancestor, still uses more than its nominal quota."""
    node: QuotaNode | None = candidate.cluster_queue.node
    while node is not None and node is not candidate.lca:
        if _within_nominal(node, contested):
            return False
        node = node.parent
    return True


def _fits_in_quota(node: QuotaNode, requests: dict[FlavorResource, int]) -> tuple[bool, dict[FlavorResource, int]]:
    """Kueue's QuantitiesFitInQuota: does ``node``'s own subtree hold ``requests`` on top of its
    usage, and what is left for the levels above once its unlent quota is used."""
    held = True
    remaining: dict[FlavorResource, int] = {}
    usage, quota, guaranteed = node.usage, node.subtree, node.guaranteed
    for fr, amount in requests.items():
        used = usage.get(fr, 0)
        if used + amount > quota.get(fr, 0):
            held = False
        remaining[fr] = max(0, amount - max(0, guaranteed.get(fr, 0) - used))
    return held, remaining


class _Gathering:
    """One walk up the preemptor's tree (collectCandidatesForHierarchicalReclaim)."""

    def __init__(
        self,
        cq: ClusterQueueInfo,
        preemptor: WorkloadInfo,
        contested: list[FlavorResource],
        cluster_queues: dict[str, ClusterQueueInfo],
        policy: ClusterQueuePreemption,
    ) -> None:
        self.cq = cq
        self.preemptor = preemptor
        self.contested = contested
        self.cluster_queues = cluster_queues
        self.reclaim_policy = policy.reclaim_within_cohort
        self.borrowing_forbidden = _borrowing_forbidden(policy)
        borrow = policy.borrow_within_cohort
        self.threshold = borrow.max_priority_threshold if borrow is not None else None
        self.pools: list[CandidatePool] = []

    def subtree(self, cohort: QuotaNode, skip: QuotaNode | None, lca: QuotaNode, advantage: bool) -> None:
        """The candidates below ``cohort``, leaving out the subtree ``skip`` already walked."""
        contested = self.contested
        for child in cohort.children:
            if child.is_cohort and child is not skip and not _within_nominal(child, contested):
                self.subtree(child, skip, lca, advantage)
        for child in cohort.children:
            if child.is_cohort or child is self.cq.node or _within_nominal(child, contested):
                continue
            other = self.cluster_queues.get(child.name)
            if other is None:
                continue
            for pool in priority_pools(
                other, self.preemptor, contested, self.reclaim_policy, HIERARCHICAL_RECLAIM, lca
            ):
                if not advantage:
                    pool.variant = self._priority_variant(pool.level.priority)
                self.pools.append(pool)

    def _priority_variant(self, priority: int) -> int:
        """Kueue's classifyPreemptionVariant for a candidate without hierarchical advantage."""
        if self.borrowing_forbidden or priority >= self.preemptor.priority:
            return RECLAIM_WITHOUT_BORROWING
        if self.threshold is not None and priority > self.threshold:
            return RECLAIM_WITHOUT_BORROWING
        return RECLAIM_WHILE_BORROWING


def _reclaim_pools(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    usage: dict[FlavorResource, int],
    contested: list[FlavorResource],
    cluster_queues: dict[str, ClusterQueueInfo],
    policy: ClusterQueuePreemption,
    hierarchical_only: bool,
) -> list[CandidatePool]:
    """Candidates in the rest of the cohort tree, each pool with its variant and meeting point
    (with ``hierarchical_only``, the levels without hierarchical advantage are not walked)."""
    node = cq.node
    if node.parent is None or policy.reclaim_within_cohort == "Never":
        return []
    gathering = _Gathering(cq, preemptor, contested, cluster_queues, policy)
    advantage, remaining = _fits_in_quota(node, usage)
    walked: QuotaNode | None = None
    ancestors = node.ancestors()
    last = len(ancestors) - 1
    for k, subtree_root in enumerate(ancestors):
        if advantage or not hierarchical_only:
            gathering.subtree(subtree_root, walked, subtree_root, advantage)
        if k == last:
            break  # (no level above the root reads what it leaves)
        held, remaining = _fits_in_quota(subtree_root, remaining)
        advantage = advantage or held
        walked = subtree_root
    return gathering.pools
