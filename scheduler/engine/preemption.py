"""Preemption (Kueue pkg/scheduler/preemption): who may be evicted so a workload fits.

Candidates are admitted workloads that use a contested (flavor, resource):
- in the preemptor's own ClusterQueue, allowed by ``withinClusterQueue``;
- in other ClusterQueues of the cohort tree that borrow on a contested resource, allowed by
  ``reclaimWithinCohort`` — and, while the preemptor itself would still borrow, only by
  ``borrowWithinCohort`` (lower priority, under ``maxPriorityThreshold``).

Candidates are ordered as Kueue orders them (other ClusterQueues first, lower priority first,
most recently admitted first, then UID), removed one by one until the preemptor fits, and then
filled back in reverse so that the victim set is minimal. With fair sharing, candidates come
from the ClusterQueues with the highest dominant resource share, under Kueue's strategies
LessThanOrEqualToFinalShare then LessThanInitialShare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from scheduler.api.kueue import ClusterQueuePreemption
from scheduler.engine.candidates import (
    Candidate,
    CandidatePool,
    cohort_pools,
    in_order,
    listed,
    ordering,
    own_pools,
    usage_by_queue,
)
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.fairsharing import dominant_resource_share
from scheduler.engine.quota import FlavorResource, QuotaNode
from scheduler.engine.workloads import WorkloadInfo

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"


class ExtraFit(Protocol):
    """A further condition the preemptor must meet once victims are gone: its gang placement on
    a topology (None where quota alone decides). Victims leave and come back one at a time, as
    the search takes and returns them, so each check costs at most one placement, not one per
    victim (``VictimsGone`` answers many without one)."""

    def remove(self, workload: WorkloadInfo) -> None: ...

    def restore(self, workload: WorkloadInfo) -> None: ...

    def fits(self) -> bool: ...


@dataclass(slots=True, init=False)
class Victim:
    workload: WorkloadInfo
    reason: str
    message: str

    # mypyc: CONTRIBUTING.md
    def __init__(self, workload: WorkloadInfo, reason: str, message: str) -> None:
        self.workload = workload
        self.reason = reason
        self.message = message


def _remove(cq: ClusterQueueInfo, workload: WorkloadInfo) -> None:
    assert workload.admission is not None
    for fr, amount in workload.admission.usage.items():
        cq.node.remove_usage(fr, amount)


def _restore(cq: ClusterQueueInfo, workload: WorkloadInfo) -> None:
    assert workload.admission is not None
    for fr, amount in workload.admission.usage.items():
        cq.node.add_usage(fr, amount)


def simulate_removal(workloads: list[WorkloadInfo], cluster_queues: dict[str, ClusterQueueInfo]) -> None:
    """Take admitted ``workloads`` out of the quota tree (Kueue's SimulateWorkloadUsageRemoval)."""
    for workload in workloads:
        cq = cluster_queues.get(workload.cluster_queue or "")
        if cq is not None and workload.admission is not None:
            _remove(cq, workload)


def undo_removal(workloads: list[WorkloadInfo], cluster_queues: dict[str, ClusterQueueInfo]) -> None:
    """Put back what ``simulate_removal`` took out."""
    for workload in reversed(workloads):
        cq = cluster_queues.get(workload.cluster_queue or "")
        if cq is not None and workload.admission is not None:
            _restore(cq, workload)


def _fits(cq: ClusterQueueInfo, usage: dict[FlavorResource, int], allow_borrowing: bool) -> bool:
    node = cq.node
    for fr, amount in usage.items():
        if amount > node.available(fr):
            return False
        if not allow_borrowing and node.borrowing_with(fr, amount):
            return False
    return True


class _Removal:
    """Candidates taken out of the quota tree while a search runs; ``restore_all`` undoes it."""

    def __init__(self, cq: ClusterQueueInfo, usage: dict[FlavorResource, int], extra_fit: ExtraFit | None) -> None:
        self.cq = cq
        self.usage = usage
        self.extra_fit = extra_fit
        self.out: list[Candidate] = []

    def take(self, candidate: Candidate) -> None:
        _remove(candidate.cluster_queue, candidate.workload)
        if self.extra_fit is not None:
            self.extra_fit.remove(candidate.workload)
        self.out.append(candidate)

    def give_back(self, candidate: Candidate) -> None:
        self._put_back(candidate)
        self.out.remove(candidate)

    def _put_back(self, candidate: Candidate) -> None:
        _restore(candidate.cluster_queue, candidate.workload)
        if self.extra_fit is not None:
            self.extra_fit.restore(candidate.workload)

    def fits(self, allow_borrowing: bool) -> bool:
        return _fits(self.cq, self.usage, allow_borrowing) and (self.extra_fit is None or self.extra_fit.fits())

    def fill_back(self, allow_borrowing: bool) -> list[Candidate]:
        """Re-admit, newest removal first (the last one is needed), every victim not needed."""
        for candidate in reversed(self.out[:-1]):
            self.give_back(candidate)
            if not self.fits(allow_borrowing):
                self.take(candidate)
        return list(self.out)

    def restore_all(self) -> None:
        for candidate in reversed(self.out):
            self._put_back(candidate)
        self.out.clear()


def _search(
    cq: ClusterQueueInfo,
    usage: dict[FlavorResource, int],
    pools: list[CandidatePool],
    allow_borrowing: bool,
    extra_fit: ExtraFit | None,
) -> list[Candidate] | None:
    """Remove candidates in Kueue's order until the preemptor fits, then fill back: a minimal set."""
    if not pools or not _fits_without_all(cq, usage, pools, allow_borrowing):
        return None  # (with no candidates there is nobody to take, whatever fits)
    removal = _Removal(cq, usage, extra_fit)
    try:
        for candidate in in_order(pools):
            removal.take(candidate)
            if removal.fits(allow_borrowing):
                return removal.fill_back(allow_borrowing)
        return None
    finally:
        removal.restore_all()


def _fits_without_all(
    cq: ClusterQueueInfo, usage: dict[FlavorResource, int], pools: list[CandidatePool], allow_borrowing: bool
) -> bool:
    """Would the preemptor's quota fit with every candidate gone? Removing usage only ever frees
    quota, so when this is False no prefix of the candidates fits either and the search would
    walk them all for nothing. Removal is summed per ClusterQueue (the quota tree composes), from
    the priority levels' totals where whole levels are candidates, so no candidate is listed."""
    removed = usage_by_queue(pools)
    for queue, totals in removed:
        for fr, amount in totals.items():
            queue.node.remove_usage(fr, amount)
    try:
        return _fits(cq, usage, allow_borrowing)
    finally:
        for queue, totals in removed:
            for fr, amount in totals.items():
                queue.node.add_usage(fr, amount)


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
) -> list[Victim] | None:
    """The victims to evict so ``preemptor`` fits with ``usage``, or None when none will do."""
    contested = _contested(cq, usage)
    if not contested and extra_fit is None:
        return []
    if not contested:
        contested = list(usage)
    policy = cq.policies.preemption
    if fair_sharing:
        return _fair_sharing_victims(cq, preemptor, usage, contested, cluster_queues, policy, extra_fit)
    return _classical_victims(cq, preemptor, usage, contested, cluster_queues, policy, extra_fit)


def _may_end_within_nominal(cq: ClusterQueueInfo, usage: dict[FlavorResource, int], own: list[CandidatePool]) -> bool:
    """Could the preemptor end within its nominal quota? Only its own ClusterQueue's victims
    lower that ClusterQueue's usage, so when even all of them are not enough, no reclaim search
    can succeed (a shortcut that decides nothing differently; it skips gathering candidates)."""
    freed: dict[FlavorResource, int] = {}
    for pool in own:
        for fr, amount in pool.usage().items():
            freed[fr] = freed.get(fr, 0) + amount
    return all(not cq.node.borrowing_with(fr, amount - freed.get(fr, 0)) for fr, amount in usage.items())


def _classical_victims(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    usage: dict[FlavorResource, int],
    contested: list[FlavorResource],
    cluster_queues: dict[str, ClusterQueueInfo],
    policy: ClusterQueuePreemption,
    extra_fit: ExtraFit | None,
) -> list[Victim] | None:
    own = own_pools(cq, preemptor, contested, policy.within_cluster_queue)
    node = cq.node
    within_nominal_possible = all(amount <= node.subtree.get(fr, 0) for fr, amount in usage.items())
    # 1. Reclaim without borrowing: the preemptor ends within its nominal quota, so any borrower
    #    the reclaim policy allows may be evicted.
    if within_nominal_possible and _may_end_within_nominal(cq, usage, own):
        reclaim = cohort_pools(cq, preemptor, contested, cluster_queues, policy.reclaim_within_cohort)
        chosen = _search(cq, usage, own + reclaim, False, extra_fit)
        if chosen is not None:
            return [_victim(c, cq, preemptor, borrowing=False) for c in chosen]
    # 2. Preemption while borrowing: own queue, plus lower-priority borrowers when
    #    borrowWithinCohort allows it.
    borrow_policy = policy.borrow_within_cohort
    while_borrowing: list[CandidatePool] = []
    if (
        borrow_policy is not None
        and borrow_policy.policy == "LowerPriority"
        and policy.reclaim_within_cohort != "Never"
    ):
        while_borrowing = cohort_pools(
            cq, preemptor, contested, cluster_queues, "LowerPriority", borrow_policy.max_priority_threshold
        )
    chosen = _search(cq, usage, own + while_borrowing, True, extra_fit)
    if chosen is None:
        return None
    return [_victim(c, cq, preemptor, borrowing=True) for c in chosen]


def _victim(candidate: Candidate, cq: ClusterQueueInfo, preemptor: WorkloadInfo, borrowing: bool) -> Victim:
    if candidate.same_queue:
        reason = IN_CLUSTER_QUEUE
    elif borrowing:
        reason = IN_COHORT_RECLAIM_WHILE_BORROWING
    else:
        reason = IN_COHORT_RECLAMATION
    return Victim(candidate.workload, reason, _message(preemptor, reason))


def _message(preemptor: WorkloadInfo, reason: str) -> str:
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid}, key: {preemptor.key}) "
        f"due to {_reason_words(reason)}"
    )


def _reason_words(reason: str) -> str:
    return {
        IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
        IN_COHORT_RECLAMATION: "reclamation within the cohort",
        IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
        IN_COHORT_FAIR_SHARING: "fair sharing within the cohort",
    }[reason]


def _fair_sharing_victims(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    usage: dict[FlavorResource, int],
    contested: list[FlavorResource],
    cluster_queues: dict[str, ClusterQueueInfo],
    policy: ClusterQueuePreemption,
    extra_fit: ExtraFit | None,
) -> list[Victim] | None:
    own = listed(own_pools(cq, preemptor, contested, policy.within_cluster_queue))
    others = listed(cohort_pools(cq, preemptor, contested, cluster_queues, policy.reclaim_within_cohort))
    node = cq.node
    within_nominal = all(node.usage.get(fr, 0) + usage[fr] <= node.subtree.get(fr, 0) for fr in contested)
    for strict in (False, True):  # LessThanOrEqualToFinalShare, then LessThanInitialShare
        removal = _Removal(cq, usage, extra_fit)
        try:
            fits = False
            for candidate in own:
                removal.take(candidate)
                if removal.fits(True):
                    fits = True
                    break
            pool = list(others)
            while not fits and pool:
                # the ClusterQueue with the highest share gives up a workload first
                pool.sort(key=lambda c: (-dominant_resource_share(c.cluster_queue.node, {}), ordering(c)))
                candidate = pool.pop(0)
                if not within_nominal and not _fair_share_allows(node, usage, candidate, strict):
                    continue
                removal.take(candidate)
                fits = removal.fits(True)
            if fits:
                chosen = removal.fill_back(True)
                return [
                    Victim(c.workload, reason, _message(preemptor, reason))
                    for c in chosen
                    for reason in [IN_CLUSTER_QUEUE if c.same_queue else IN_COHORT_FAIR_SHARING]
                ]
        finally:
            removal.restore_all()
    return None


def _almost_lowest_common_ancestors(preemptor: QuotaNode, target: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
    """The children of the lowest common ancestor on the preemptor's and the target's paths.

    Kueue (fairsharing/least_common_ancestor.go) compares the shares of these two subtrees, so
    ClusterQueues at different depths of a cohort tree are weighed at the level where they meet.
    """
    target_path = [target, *target.ancestors()]
    on_target_path = {id(node): index for index, node in enumerate(target_path)}
    below = preemptor
    node: QuotaNode | None = preemptor
    while node is not None and id(node) not in on_target_path:
        below = node
        node = node.parent
    if node is None or node is preemptor:  # separate trees, or nested (cannot happen for two leaves)
        return preemptor, target
    index = on_target_path[id(node)]
    return below, target_path[index - 1] if index > 0 else target


def _fair_share_allows(node: QuotaNode, usage: dict[FlavorResource, int], candidate: Candidate, strict: bool) -> bool:
    """Kueue's fair-sharing preemption strategies for a candidate in another ClusterQueue.

    Shares are those of the preemptor's and the target's almost-lowest-common-ancestors, with the
    preemptor's usage simulated in: LessThanOrEqualToFinalShare preempts when the preemptor's new
    share is at most the target's share after losing the candidate; LessThanInitialShare when it
    is below the target's share before.
    """
    preemptor_side, target_side = _almost_lowest_common_ancestors(node, candidate.cluster_queue.node)
    for fr, amount in usage.items():
        node.add_usage(fr, amount)
    try:
        preemptor_share = dominant_resource_share(preemptor_side, {})
        if strict:  # LessThanInitialShare
            return preemptor_share < dominant_resource_share(target_side, {})
        _remove(candidate.cluster_queue, candidate.workload)  # LessThanOrEqualToFinalShare
        try:
            return preemptor_share <= dominant_resource_share(target_side, {})
        finally:
            _restore(candidate.cluster_queue, candidate.workload)
    finally:
        for fr, amount in usage.items():
            node.remove_usage(fr, amount)
