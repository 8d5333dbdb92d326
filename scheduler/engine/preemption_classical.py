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
from scheduler.engine.candidates import (
    HIERARCHICAL_RECLAIM,
    RECLAIM_WHILE_BORROWING,
    RECLAIM_WITHOUT_BORROWING,
    WITHIN_CLUSTER_QUEUE,
    Candidate,
    CandidatePool,
    own_pools,
    priority_pools,
)
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.preemption_search import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    ExtraFit,
    Victim,
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
    own = own_pools(cq, preemptor, contested, policy.within_cluster_queue)
    reclaimable = _reclaimable_queues(cq.node, contested, policy)
    if not own and not reclaimable:
        return None  # nobody to take: what the search would find after gathering no pools
    borrowing_forbidden = _borrowing_forbidden(policy)
    # At or over nominal without borrowWithinCohort, Kueue searches only with borrowing, where
    # no priority-based candidate is valid: gather the hierarchical ones alone.
    only_borrowing = borrowing_forbidden and not _under_nominal(cq.node, contested)
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
