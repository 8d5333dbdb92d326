"""Hierarchical quota arithmetic: ClusterQueues and Cohorts as one tree of resource nodes.

Follows Kueue's ``pkg/cache/scheduler/resource_node.go`` per (flavor, resource):

- ``subtree`` = own nominal + Σ children (child.subtree − child.guaranteed)
- ``guaranteed`` = max(0, subtree − lendingLimit) when a lending limit is set, else 0: capacity
  that never leaves the node's subtree.
- a cohort's ``usage`` = Σ children's usage beyond their guaranteed quota.
- ``available`` = what one more workload may take now, through borrowing limits up the tree;
  ``potential_available`` = the same with an empty cluster (the most a workload can ever get).

All amounts are engine integers (milli-cpu, bytes, counts); absent keys mean zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FlavorResource = tuple[str, str]  # (flavor, resource)


@dataclass(eq=False, slots=True)
class QuotaNode:
    """One ClusterQueue (a leaf) or Cohort in the quota tree."""

    name: str
    is_cohort: bool
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    nominal: dict[FlavorResource, int] = field(default_factory=dict)
    borrowing_limit: dict[FlavorResource, int] = field(default_factory=dict)
    lending_limit: dict[FlavorResource, int] = field(default_factory=dict)
    subtree: dict[FlavorResource, int] = field(default_factory=dict)
    guaranteed: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    fair_weight: float = 1.0
    tree_height: int = 0  # distance to the furthest leaf below (Kueue's getNodeHeight); set by recompute
    # potential_available per resource: it depends on quotas only, never on usage, and every
    # flavor assignment asks it; recompute_subtree_quotas clears it
    potential: dict[FlavorResource, int] = field(default_factory=dict)
    leaf_cache: list[QuotaNode] | None = None  # leaves(); recompute_subtree_quotas clears it

    # ------------------------------------------------------------------------------ structure

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def ancestors(self) -> list[QuotaNode]:
        found: list[QuotaNode] = []
        node = self.parent
        while node is not None:
            found.append(node)
            node = node.parent
        return found

    def height(self) -> int:
        return 0 if not self.children else 1 + max(child.height() for child in self.children)

    def leaves(self) -> list[QuotaNode]:
        """The ClusterQueues below (the preemption search asks the root on every probe)."""
        if not self.is_cohort:
            return [self]
        if self.leaf_cache is None:
            found: list[QuotaNode] = []
            for child in self.children:
                found.extend(child.leaves())
            self.leaf_cache = found
        return self.leaf_cache

    # ------------------------------------------------------------------------------ arithmetic

    def available(self, fr: FlavorResource) -> int:
        """Quota a new workload of this node may use now for ``fr`` (may be negative)."""
        if self.parent is None:
            return self.subtree.get(fr, 0) - self.usage.get(fr, 0)
        return self._available_below(self.parent, fr, self.usage.get(fr, 0), self.guaranteed.get(fr, 0))

    def _available_below(self, parent: QuotaNode, fr: FlavorResource, usage: int, guaranteed: int) -> int:
        """``available`` of a node with a parent, from the node's usage and guaranteed quota
        (``fitting`` has read them already)."""
        local_available = max(0, guaranteed - usage)
        if parent.parent is None:  # the parent is the root, as in most trees: no second call
            parent_available = parent.subtree.get(fr, 0) - parent.usage.get(fr, 0)
        else:
            parent_available = parent.available(fr)
        limit = self.borrowing_limit.get(fr)
        if limit is not None:
            stored_in_parent = self.subtree.get(fr, 0) - guaranteed
            used_in_parent = max(0, usage - guaranteed)
            parent_available = min(parent_available, stored_in_parent - used_in_parent + limit)
        return local_available + parent_available

    def potential_available(self, fr: FlavorResource) -> int:
        """The most this node could ever use for ``fr``, on an otherwise empty tree."""
        most = self.potential.get(fr)
        if most is not None:
            return most
        if self.parent is None:
            most = self.subtree.get(fr, 0)
        else:
            most = self.guaranteed.get(fr, 0) + self.parent.potential_available(fr)
            limit = self.borrowing_limit.get(fr)
            if limit is not None:
                most = min(most, self.subtree.get(fr, 0) + limit)
        self.potential[fr] = most
        return most

    def add_usage(self, fr: FlavorResource, amount: int) -> None:
        node: QuotaNode | None = self
        while node is not None and amount > 0:
            local_available = max(0, node.guaranteed.get(fr, 0) - node.usage.get(fr, 0))
            node.usage[fr] = node.usage.get(fr, 0) + amount
            amount -= local_available
            node = node.parent

    def remove_usage(self, fr: FlavorResource, amount: int) -> None:
        node: QuotaNode | None = self
        while node is not None and amount > 0:
            stored_in_parent = node.usage.get(fr, 0) - node.guaranteed.get(fr, 0)
            node.usage[fr] = node.usage.get(fr, 0) - amount
            if stored_in_parent <= 0:
                return
            amount = min(amount, stored_in_parent)
            node = node.parent

    def borrowing_with(self, fr: FlavorResource, amount: int) -> bool:
        return self.usage.get(fr, 0) + amount > self.subtree.get(fr, 0)

    def is_borrowing(self, fr: FlavorResource) -> bool:
        return self.parent is not None and self.usage.get(fr, 0) > self.subtree.get(fr, 0)

    def borrowed(self, fr: FlavorResource) -> int:
        return max(0, self.usage.get(fr, 0) - self.subtree.get(fr, 0)) if self.parent is not None else 0

    def borrow_height(self, fr: FlavorResource, amount: int) -> int:
        """Kueue's borrowing level for ``amount`` more of ``fr``: 0 = within this ClusterQueue's quota."""
        return self.lowest_fitting_subtree(fr, amount)[0]

    def lowest_fitting_subtree(self, fr: FlavorResource, amount: int) -> tuple[int, bool]:
        """Kueue's FindHeightOfLowestSubtreeThatFits: (height, may reclaim in the hierarchy).

        Walks up from this node to the first subtree whose own quota holds ``amount`` more and
        returns that subtree's height (the distance to its furthest leaf, so 0 means no
        borrowing; levels grow up the tree but need not be consecutive), or the root's height
        when none does. The flag is True when that subtree is below the root: capacity lent out
        of it could be reclaimed without reaching further up.
        """
        parent = self.parent
        if parent is None:
            return 0, False
        if not self.borrowing_with(fr, amount):
            return 0, True
        return parent._lowest_fitting_above(fr, amount - max(0, self.guaranteed.get(fr, 0) - self.usage.get(fr, 0)))

    def _lowest_fitting_above(self, fr: FlavorResource, remaining: int) -> tuple[int, bool]:
        """``lowest_fitting_subtree``'s walk from this node (a child's parent) up, for what the
        child's own quota leaves over."""
        node = self
        while True:
            if not node.borrowing_with(fr, remaining) or node.parent is None:
                return node.tree_height, node.parent is not None
            remaining -= max(0, node.guaranteed.get(fr, 0) - node.usage.get(fr, 0))
            node = node.parent

    def fitting(self, fr: FlavorResource, amount: int) -> tuple[int, bool, int]:
        """``(*lowest_fitting_subtree(fr, amount), available(fr))`` in one pass: flavor assignment
        asks both of every resource of every head, and they read the same entries."""
        parent = self.parent
        usage = self.usage.get(fr, 0)
        subtree = self.subtree.get(fr, 0)
        if parent is None:
            return 0, False, subtree - usage
        guaranteed = self.guaranteed.get(fr, 0)
        available = self._available_below(parent, fr, usage, guaranteed)
        if usage + amount <= subtree:  # not borrowing_with: fits within this node's own subtree
            return 0, True, available
        if parent.parent is None:  # the root ends the walk whatever is left
            return parent.tree_height, False, available
        height, may_reclaim = parent._lowest_fitting_above(fr, amount - max(0, guaranteed - usage))
        return height, may_reclaim, available


def recompute_subtree_quotas(root: QuotaNode) -> None:
    """Fill ``subtree``, ``guaranteed`` and ``tree_height`` bottom-up after the tree's shape or quotas changed."""
    root.potential = {}
    root.leaf_cache = None
    for child in root.children:
        recompute_subtree_quotas(child)
    root.tree_height = 1 + max(child.tree_height for child in root.children) if root.children else 0
    subtree = dict(root.nominal)
    for child in root.children:
        for fr, amount in child.subtree.items():
            stored = amount - child.guaranteed.get(fr, 0)
            subtree[fr] = subtree.get(fr, 0) + stored
    root.subtree = subtree
    root.guaranteed = {
        fr: max(0, subtree.get(fr, 0) - limit) for fr, limit in root.lending_limit.items() if root.parent
    }


def recompute_cohort_usage(root: QuotaNode) -> None:
    """A cohort's usage is what its children use beyond their guaranteed quota."""
    if not root.is_cohort:
        return
    usage: dict[FlavorResource, int] = {}
    for child in root.children:
        recompute_cohort_usage(child)
        for fr, amount in child.usage.items():
            beyond = amount - child.guaranteed.get(fr, 0)
            if beyond > 0:
                usage[fr] = usage.get(fr, 0) + beyond
    root.usage = usage
