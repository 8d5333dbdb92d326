"""Fair sharing: the dominant resource share (DRS) of a ClusterQueue or Cohort.

Kueue pkg/cache/scheduler/fair_sharing.go: for each resource, what a node borrows beyond its
subtree quota (summed over flavors) relative to what its parent could lend it, in thousandths;
the DRS is the largest such ratio divided by the node's fair-sharing weight. A node that does
not borrow has share 0; a weight of 0 makes any borrowing infinitely expensive.
"""

from __future__ import annotations

import math

from scheduler.engine.quota import FlavorResource, QuotaNode


def dominant_resource_share(node: QuotaNode, extra: dict[FlavorResource, int]) -> float:
    """DRS of ``node`` if it also used ``extra``; 0 for a node without a parent."""
    if node.parent is None:
        return 0.0
    borrowed: dict[str, int] = {}
    lendable: dict[str, int] = {}
    keys = set(node.usage) | set(extra) | set(node.subtree)
    for fr in keys:
        _, resource = fr
        over = node.usage.get(fr, 0) + extra.get(fr, 0) - node.subtree.get(fr, 0)
        if over > 0:
            borrowed[resource] = borrowed.get(resource, 0) + over
        lendable[resource] = lendable.get(resource, 0) + max(0, node.parent.potential_available(fr))
    if not borrowed:
        return 0.0
    if node.fair_weight == 0:
        return math.inf
    ratio = 0.0
    for resource in sorted(borrowed):
        pool = lendable.get(resource, 0)
        share = math.inf if pool <= 0 else borrowed[resource] * 1000 / pool
        ratio = max(ratio, share)
    return ratio / node.fair_weight
