"""Kueue's Topology Aware Scheduling algorithms: BestFit and LeastFreeCapacity.

From Kueue's ``findTopologyAssignment`` (shared/reference/kueue.md §3, KEP-2724). Phase 2a: at
the requested level, sort the domains by the pods of the shape they hold, descending for BestFit
and ascending for LeastFreeCapacity (ties in topology order); BestFit takes the tightest domain
that holds all pods when the largest does, LeastFreeCapacity the first in its order that does.
When none does, a required level fails and a preferred one is retried one level up; at the top
the pods go over several domains in that order, the last one chosen best-fit. Phase 2b: at every
lower level the pods of the chosen domains are spread over all their children the same way,
down to the nodes. (Leaders, slices and the balanced profile are not modelled.)
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from scheduler.topology.graph import IntArray, TopologyIndex
from scheduler.topology.policy import Chosen, PlacementView

Order = Literal["best-fit", "least-free"]


def _ordered(caps: IntArray, candidates: IntArray, order: Order) -> IntArray:
    """``candidates`` by capacity, descending for BestFit and ascending for LeastFreeCapacity,
    ties in topology order."""
    key = -caps[candidates] if order == "best-fit" else caps[candidates]
    return candidates[np.lexsort((candidates, key))]


def _one_domain(caps: IntArray, candidates: IntArray, need: int, order: Order) -> int | None:
    """The domain that holds all ``need`` pods: BestFit's tightest, LeastFreeCapacity's first."""
    fitting = candidates[caps[candidates] >= need]
    if not len(fitting):
        return None
    return int(_ordered(caps, fitting, "least-free")[0])  # the smallest that fits, first of equals


def _spread(caps: IntArray, candidates: IntArray, need: int, order: Order) -> list[tuple[int, int]]:
    """``need`` pods over ``candidates`` in the order's sequence, the last domain best-fit:
    (domain, pods) pairs, or [] when they do not hold them all."""
    ordered = _ordered(caps, candidates, order)
    picks: list[tuple[int, int]] = []
    remaining = need
    for position, domain in enumerate(ordered.tolist()):
        room = int(caps[domain])
        if room <= 0:
            continue
        if room >= remaining:  # this one holds the rest: the tightest among those left that do
            rest = ordered[position:]
            last = _one_domain(caps, rest, remaining, order)
            assert last is not None  # ``domain`` itself holds the rest
            picks.append((last, remaining))
            return picks
        picks.append((domain, room))
        remaining -= room
    return []


def kueue_tas(
    index: TopologyIndex, slots: IntArray, pods: int, level: int, *, required: bool = False, order: Order = "best-fit"
) -> IntArray | None:
    """Kueue's TAS placement of ``pods`` pods with per-node ``slots`` at ``level`` (an internal
    level index; 0 is the whole flavor): one node position per pod, in topology order, or None."""
    if pods <= 0:
        return np.zeros(0, dtype=np.int64)
    caps = [np.add.reduceat(slots, starts) if len(slots) else np.zeros(0, dtype=np.int64) for starts in index.starts]
    level = max(level, 0)
    chosen: list[tuple[int, int]] = []
    while True:
        domain = _one_domain(caps[level], np.arange(len(caps[level]), dtype=np.int64), pods, order)
        if domain is not None:
            chosen = [(domain, pods)]
            break
        if required or level <= 1:
            if required:
                return None
            chosen = _spread(caps[level], np.arange(len(caps[level]), dtype=np.int64), pods, order)
            if not chosen:
                return None
            break
        level -= 1
    last = index.depth - 1
    while level < last:
        spans = [np.arange(index.child_lo[level][d], index.child_hi[level][d], dtype=np.int64) for d, _ in chosen]
        chosen = _spread(caps[level + 1], np.concatenate(spans), sum(count for _, count in chosen), order)
        if not chosen:
            return None
        level += 1
    chosen.sort()
    return np.repeat(np.array([d for d, _ in chosen], dtype=np.int64), np.array([c for _, c in chosen], dtype=np.int64))


def kueue_best_fit(index: TopologyIndex, slots: IntArray, pods: int, preferred_level: int) -> IntArray | None:
    """Kueue's TAS BestFit for a preferred level."""
    return kueue_tas(index, slots, pods, preferred_level)


class KueueTas:
    """Kueue's TAS algorithm as a placement policy, at the pod set's level."""

    def __init__(self, name: str, order: Order) -> None:
        self.name = name
        self.order: Order = order

    def choose(self, view: PlacementView) -> Chosen | None:
        nodes = kueue_tas(view.index, view.slots, view.pods, view.level, required=view.required, order=self.order)
        return None if nodes is None else Chosen(nodes)
