"""Preemption with fair sharing (Kueue pkg/scheduler/preemption/preemption.go ``fairPreemptions``
and preemption/fairsharing/).

The preemptor's usage is added to its ClusterQueue first, so every share below includes it.
ClusterQueues give up workloads in the order of the target ordering: from the root down, the
child with the highest dominant resource share (DRS), skipping ClusterQueues and cohorts that do
not borrow (except on the preemptor's own path) and those without candidates; it is walked again
after every eviction, as shares change. The preemptor's own ClusterQueue competes by its share
like any other and gives up its lowest-priority workloads first.

From another ClusterQueue a workload is taken when the preemptor stays within its nominal quota
on the contested resources (a reclamation), or when a strategy allows it, comparing the shares
of the two subtrees just below where the paths of the preemptor and the target meet:
LessThanOrEqualToFinalShare (the preemptor's new share is at most the target's share once the
workload is gone), then, for the workloads the first refused, LessThanInitialShare (below the
target's share before).
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduler.engine.candidates import Candidate, borrowing_queue_pools, listed, ordering, own_pools
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.fairsharing import BELOW_ALL, DominantResourceShare, dominant_resource_share
from scheduler.engine.preemption_search import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    ExtraFit,
    Removal,
    Victim,
    remove_workload,
    restore_workload,
    victim,
)
from scheduler.engine.quota import FlavorResource, QuotaNode
from scheduler.engine.workloads import WorkloadInfo


def fair_sharing_victims(
    cq: ClusterQueueInfo,
    preemptor: WorkloadInfo,
    usage: dict[FlavorResource, int],
    contested: list[FlavorResource],
    cluster_queues: dict[str, ClusterQueueInfo],
    extra_fit: ExtraFit | None,
) -> list[Victim] | None:
    policy = cq.policies.preemption
    candidates = listed(
        own_pools(cq, preemptor, contested, policy.within_cluster_queue)
        + borrowing_queue_pools(cq, preemptor, contested, cluster_queues, policy.reclaim_within_cohort)
    )
    if not candidates:
        return None
    search = _FairSearch(cq, usage, contested, extra_fit)
    try:
        with_preemptor(cq.node, usage, True)  # the shares include the incoming workload
        try:
            fits, retry = search.first_strategy(candidates)
            if not fits:
                fits = search.second_strategy(retry)
        finally:
            with_preemptor(cq.node, usage, False)
        if not fits:
            return None
        chosen = search.removal.fill_back(True)
        return [victim(c, search.reasons[id(c)], preemptor) for c in chosen]
    finally:
        search.removal.restore_all()


def with_preemptor(node: QuotaNode, usage: dict[FlavorResource, int], add: bool) -> None:
    for fr, amount in usage.items():
        if add:
            node.add_usage(fr, amount)
        else:
            node.remove_usage(fr, amount)


class _FairSearch:
    """One fair-sharing search: what it has taken (and why), and its fit test."""

    def __init__(
        self,
        cq: ClusterQueueInfo,
        usage: dict[FlavorResource, int],
        contested: list[FlavorResource],
        extra_fit: ExtraFit | None,
    ) -> None:
        self.cq = cq
        self.usage = usage
        self.contested = contested
        self.removal = Removal(cq, usage, extra_fit)
        self.reasons: dict[int, str] = {}  # id(candidate) -> why it was taken

    def _take(self, candidate: Candidate, reason: str) -> bool:
        """Take ``candidate``; does the preemptor fit now (its own usage set aside)?"""
        self.removal.take(candidate)
        self.reasons[id(candidate)] = reason
        with_preemptor(self.cq.node, self.usage, False)
        try:
            return self.removal.fits(True)
        finally:
            with_preemptor(self.cq.node, self.usage, True)

    def first_strategy(self, candidates: list[Candidate]) -> tuple[bool, list[Candidate]]:
        """runFirstFsStrategy: (fits, the candidates the strategy refused)."""
        node = self.cq.node
        # FairSharingPreemptWithinNominal: a preemptor that stays within nominal quota reclaims
        within_nominal = not any(node.is_borrowing(fr) for fr in self.contested)
        retry: list[Candidate] = []
        ordering_ = _TargetOrdering(node, candidates)
        for target in ordering_.targets():
            if target is node:
                if self._take(ordering_.pop(target), IN_CLUSTER_QUEUE):
                    return True, retry
                continue
            if within_nominal:
                if self._take(ordering_.pop(target), IN_COHORT_RECLAMATION):
                    return True, retry
                continue
            preemptor_share = _shares(node, target)[0]
            while ordering_.has_workload(target):
                candidate = ordering_.pop(target)
                if preemptor_share.key() <= _target_share_without(node, candidate).key():
                    if self._take(candidate, IN_COHORT_FAIR_SHARING):
                        return True, retry
                    break  # shares moved: the ordering picks the next target afresh
                retry.append(candidate)
        return False, retry

    def second_strategy(self, retry: list[Candidate]) -> bool:
        """runSecondFsStrategy (LessThanInitialShare): one workload at most from each target."""
        node = self.cq.node
        ordering_ = _TargetOrdering(node, retry)
        for target in ordering_.targets():
            preemptor_share, target_share = _shares(node, target)
            if preemptor_share.key() < target_share.key() and self._take(ordering_.pop(target), IN_COHORT_FAIR_SHARING):
                return True
            ordering_.drop(target)
        return False


def _almost_lowest_common_ancestors(preemptor: QuotaNode, target: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
    """The children of the lowest common ancestor on the preemptor's and the target's paths.

    Kueue (fairsharing/least_common_ancestor.go) compares the shares of these two subtrees, so
    ClusterQueues at different depths of a cohort tree are weighed at the level where they meet.
    """
    preemptor_path = {id(node) for node in preemptor.ancestors()}
    target_side = target
    lca = target.parent
    while lca is not None and id(lca) not in preemptor_path:
        target_side, lca = lca, lca.parent
    preemptor_side = preemptor
    while preemptor_side.parent is not lca and preemptor_side.parent is not None:
        preemptor_side = preemptor_side.parent
    return preemptor_side, target_side


def _shares(preemptor: QuotaNode, target: QuotaNode) -> tuple[DominantResourceShare, DominantResourceShare]:
    """(preemptor's new share, target's share now) at the almost-lowest-common-ancestors."""
    preemptor_side, target_side = _almost_lowest_common_ancestors(preemptor, target)
    return dominant_resource_share(preemptor_side, {}), dominant_resource_share(target_side, {})


def _target_share_without(preemptor: QuotaNode, candidate: Candidate) -> DominantResourceShare:
    """The target's share once ``candidate`` is gone (the removal simulated through the tree)."""
    remove_workload(candidate.cluster_queue, candidate.workload)
    try:
        target_side = _almost_lowest_common_ancestors(preemptor, candidate.cluster_queue.node)[1]
        return dominant_resource_share(target_side, {})
    finally:
        restore_workload(candidate.cluster_queue, candidate.workload)


class _TargetOrdering:
    """Kueue's TargetClusterQueueOrdering: which ClusterQueue gives up a workload next.

    From the root, the child with the highest share: a ClusterQueue (ties: its first candidate
    in Kueue's candidate order) or a cohort (ties: the later one, and a cohort over a
    ClusterQueue), descending into cohorts. A ClusterQueue without candidates, or not borrowing
    (the preemptor's own excepted), is pruned, and so is a cohort not borrowing off the
    preemptor's path, or one whose children are all pruned; the walk ends with the root.
    """

    def __init__(self, preemptor: QuotaNode, candidates: list[Candidate]) -> None:
        self.preemptor = preemptor
        self.on_path = {id(node) for node in preemptor.ancestors()}
        self.by_queue: dict[int, list[Candidate]] = {}
        for candidate in candidates:  # in candidate order; popped from the end
            self.by_queue.setdefault(id(candidate.cluster_queue.node), []).append(candidate)
        for queued in self.by_queue.values():
            queued.reverse()
        self.pruned: set[int] = set()

    def has_workload(self, node: QuotaNode) -> bool:
        return bool(self.by_queue.get(id(node)))

    def pop(self, node: QuotaNode) -> Candidate:
        return self.by_queue[id(node)].pop()

    def drop(self, node: QuotaNode) -> None:
        self.pruned.add(id(node))

    def targets(self) -> Iterator[QuotaNode]:
        preemptor = self.preemptor
        if preemptor.parent is None:
            while self.has_workload(preemptor):
                yield preemptor
            return
        root = preemptor.root()
        while id(root) not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode) -> QuotaNode | None:
        best_queue: QuotaNode | None = None
        best_queue_share = BELOW_ALL
        best_cohort: QuotaNode | None = None
        best_cohort_share = BELOW_ALL
        pruned = self.pruned
        for child in cohort.children:
            if id(child) in pruned:
                continue
            share = dominant_resource_share(child, {})
            if child.is_cohort:
                if not share.borrowing and id(child) not in self.on_path:
                    pruned.add(id(child))
                elif share.key() >= best_cohort_share.key():
                    best_cohort, best_cohort_share = child, share
            elif (not share.borrowing and child is not self.preemptor) or not self.has_workload(child):
                pruned.add(id(child))
            elif best_queue is None or share.key() > best_queue_share.key():
                best_queue, best_queue_share = child, share
            elif share.key() == best_queue_share.key() and ordering(self._first(child)) < ordering(
                self._first(best_queue)
            ):
                best_queue = child
        if best_cohort is None and best_queue is None:
            pruned.add(id(cohort))
            return None
        if best_cohort is not None and best_cohort_share.key() >= best_queue_share.key():
            return self._next(best_cohort)
        return best_queue

    def _first(self, node: QuotaNode) -> Candidate:
        return self.by_queue[id(node)][-1]
