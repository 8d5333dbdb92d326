"""Fair sharing: dominant resource shares, and the order a cycle's heads are tried in.

Kueue pkg/cache/scheduler/fair_sharing.go: for each resource, what a node borrows beyond its
subtree quota (summed over flavors) relative to what its parent could lend it (summed over every
flavor of the tree), in thousandths; the dominant resource share (DRS) is the largest such ratio
divided by the node's fair-sharing weight. A node that does not borrow has share 0; a node of
weight 0 that borrows is above every node of positive weight.

Kueue pkg/scheduler/fair_sharing_iterator.go: with fair sharing, the heads of a cycle are taken one
at a time, each by a tournament over the cohort tree, run afresh after every decision. At each
cohort, every child (a ClusterQueue with its head, or a child cohort with the winner of its own
tournament) is weighed by the child's DRS with the head's usage added: a child that would not
borrow on the flavors the head asks for wins over one that would (FairSharingPrioritizeNonBorrowing),
then the lower share, then the higher priority, then the earlier queue order time.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.engine.quota import FlavorResource, QuotaNode
from scheduler.engine.workloads import WorkloadInfo


@dataclass(slots=True, init=False)
class DominantResourceShare:
    """One node's DRS, compared as Kueue's CompareDRS compares them (``key``)."""

    ratio: float  # the unweighted ratio of the dominant resource, in thousandths
    weight: float
    borrowed: list[FlavorResource]  # where the node uses more than its subtree quota

    # mypyc: CONTRIBUTING.md
    def __init__(self, ratio: float, weight: float, borrowed: list[FlavorResource]) -> None:
        self.ratio = ratio
        self.weight = weight
        self.borrowed = borrowed

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed)

    @property
    def share(self) -> float:
        """The weighted share (infinite for a weight of 0), as Kueue reports it."""
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return float("inf")
        return self.ratio / self.weight

    def key(self) -> tuple[int, float]:
        """Sorts as CompareDRS: a borrower of weight 0 above all others, among them by ratio."""
        if self.weight == 0 and self.ratio != 0:
            return (1, self.ratio)
        return (0, self.share)

    def borrowing_on(self, requested: dict[FlavorResource, int]) -> bool:
        """Does the node borrow on a flavor and resource that ``requested`` asks for?"""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


BELOW_ALL = DominantResourceShare(-1.0, 1.0, [])  # Kueue's NegativeDRS: where a search for the highest starts


def _lendable(parent: QuotaNode) -> dict[str, int]:
    """Per resource, what ``parent`` could lend on an otherwise empty tree, over all the tree's flavors."""
    lendable: dict[str, int] = {}
    for fr in parent.root().subtree:
        lendable[fr[1]] = lendable.get(fr[1], 0) + parent.potential_available(fr)
    return lendable


def dominant_resource_share(node: QuotaNode, extra: dict[FlavorResource, int]) -> DominantResourceShare:
    """DRS of ``node`` if it also used ``extra``; share 0 for a node without a parent."""
    parent = node.parent
    if parent is None:
        return DominantResourceShare(0.0, node.fair_weight, [])
    borrowed_by_resource: dict[str, int] = {}
    borrowed: list[FlavorResource] = []
    usage = node.usage
    for fr, quota in node.subtree.items():
        over = extra.get(fr, 0) + usage.get(fr, 0) - quota
        if over > 0:
            borrowed_by_resource[fr[1]] = borrowed_by_resource.get(fr[1], 0) + over
            borrowed.append(fr)
    if not borrowed:
        return DominantResourceShare(0.0, node.fair_weight, borrowed)
    lendable = _lendable(parent)
    ratio = 0.0
    for resource, amount in borrowed_by_resource.items():
        pool = lendable.get(resource, 0)
        if pool > 0:  # (Kueue leaves a resource nobody can lend out of the ratio)
            ratio = max(ratio, amount * 1000.0 / pool)
    return DominantResourceShare(ratio, node.fair_weight, borrowed)


@dataclass(slots=True, init=False)
class FairNominee:
    """A ClusterQueue's head as the tournament sees it: where it queues, who, and what it asks."""

    node: QuotaNode
    workload: WorkloadInfo
    usage: dict[FlavorResource, int]

    # mypyc: CONTRIBUTING.md
    def __init__(self, node: QuotaNode, workload: WorkloadInfo, usage: dict[FlavorResource, int]) -> None:
        self.node = node
        self.workload = workload
        self.usage = usage


class FairSharingOrder:
    """The heads of one round, handed out one at a time by Kueue's fair-sharing tournament.

    ``pop(version)`` says which nominee to try next (its index); ``version`` changes whenever the
    quota tree changed since the previous pop, so the shares are worked out again only then.
    Kueue starts from an arbitrary ClusterQueue's root and breaks full ties by map order; here
    the first waiting nominee's root goes first and ties keep the earlier child, cohorts before
    ClusterQueues, each in the order the tree lists them.
    """

    def __init__(self, nominees: list[FairNominee]) -> None:
        self._nominees = nominees
        self._waiting: dict[int, int] = {id(n.node): index for index, n in enumerate(nominees)}
        self._shares: dict[tuple[int, int], DominantResourceShare] = {}  # (cohort, nominee) -> its child's DRS
        self._shares_version = -1
        self._shares_root: QuotaNode | None = None

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def pop(self, version: int) -> int:
        first = self._nominees[next(iter(self._waiting.values()))]
        if first.node.parent is None:
            return self._take(first.node)
        root = first.node.root()
        if version != self._shares_version or root is not self._shares_root:
            self._compute_shares(root)
            self._shares_version, self._shares_root = version, root
        winner = self._tournament(root)
        assert winner is not None  # the first waiting nominee is in this tree
        return self._take(self._nominees[winner].node)

    def _take(self, node: QuotaNode) -> int:
        return self._waiting.pop(id(node))

    def _compute_shares(self, root: QuotaNode) -> None:
        """Each waiting nominee's DRS at every level of its path, with its usage added (computeDRS)."""
        shares = self._shares
        shares.clear()
        waiting = self._waiting
        for leaf in root.leaves():
            index = waiting.get(id(leaf))
            if index is None:
                continue
            usage = self._nominees[index].usage
            for fr, amount in usage.items():
                leaf.add_usage(fr, amount)
            try:
                child = leaf
                parent = leaf.parent
                while parent is not None:
                    shares[(id(parent), index)] = dominant_resource_share(child, {})
                    child, parent = parent, parent.parent
            finally:
                for fr, amount in usage.items():
                    leaf.remove_usage(fr, amount)

    def _tournament(self, cohort: QuotaNode) -> int | None:
        """The winner among ``cohort``'s children (runTournament), None when none has a nominee."""
        contenders: list[int] = []
        for child in cohort.children:
            if child.is_cohort:
                winner = self._tournament(child)
                if winner is not None:
                    contenders.append(winner)
        for child in cohort.children:
            if not child.is_cohort:
                index = self._waiting.get(id(child))
                if index is not None:
                    contenders.append(index)
        if not contenders:
            return None
        best = contenders[0]
        for current in contenders[1:]:
            if self._fairer(current, best, id(cohort)):
                best = current
        return best

    def _fairer(self, a: int, b: int, cohort: int) -> bool:
        """Kueue's entryComparer.less at ``cohort``: should nominee ``a`` go before ``b``?"""
        share_a, share_b = self._shares[(cohort, a)], self._shares[(cohort, b)]
        nominee_a, nominee_b = self._nominees[a], self._nominees[b]
        borrows_a = share_a.borrowing_on(nominee_a.usage)
        if borrows_a != share_b.borrowing_on(nominee_b.usage):
            return not borrows_a
        key_a, key_b = share_a.key(), share_b.key()
        if key_a != key_b:
            return key_a < key_b
        workload_a, workload_b = nominee_a.workload, nominee_b.workload
        if workload_a.priority != workload_b.priority:
            return workload_a.priority > workload_b.priority
        return workload_a.queue_order_time < workload_b.queue_order_time
