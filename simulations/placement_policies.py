"""Baseline placement policies to compare trainyard's placer against: first-fit, Kueue's
TAS BestFit and random.

They serve ``trainyard bench placement`` and the simulator's saturation replay
(``simulations.saturation``). All work on the same inputs: ``slots[i]`` (pods of the gang's
shape that fit on node i, nodes in topology order) and the per-level domain arrays of
``scheduler.topology.TopologyIndex``. Each returns one node position per pod, or None when the
gang does not fit.
"""

from __future__ import annotations

import numpy as np

from scheduler.topology.graph import IntArray, TopologyIndex


def first_fit(slots: IntArray, pods: int) -> IntArray | None:
    """Walk the nodes in order, filling each until every pod has a node."""
    running = np.cumsum(slots)
    if not len(running) or int(running[-1]) < pods:
        return None
    last = int(np.searchsorted(running, pods))
    taken = slots[: last + 1].copy()
    taken[last] -= int(running[last]) - pods
    return np.repeat(np.arange(last + 1, dtype=np.int64), taken)


def random_fit(slots: IntArray, pods: int, rng: np.random.Generator) -> IntArray | None:
    """Each pod on a node drawn uniformly among the nodes that still have room for one more
    (the "random" baseline of the FGD paper, which spreads pods and so fragments the cluster)."""
    free = slots.copy()
    chosen: list[int] = []
    for _ in range(pods):
        candidates = np.flatnonzero(free > 0)
        if not len(candidates):
            return None
        node = int(candidates[int(rng.integers(len(candidates)))])
        free[node] -= 1
        chosen.append(node)
    return np.array(sorted(chosen), dtype=np.int64)


def _best_fit_pick(caps: IntArray, candidates: IntArray, need: int) -> list[tuple[int, int]]:
    """Kueue BestFit over ``candidates``: largest first until the rest fits one, then the
    tightest domain for the rest (domains sorted by capacity descending, then order)."""
    order = candidates[np.lexsort((candidates, -caps[candidates]))]
    picks: list[tuple[int, int]] = []
    remaining = need
    for position, domain in enumerate(order.tolist()):
        if int(caps[domain]) >= remaining:  # the largest left fits the rest: take the tightest
            rest = order[position:]
            fitting = rest[caps[rest] >= remaining]
            tight = int(fitting[np.lexsort((fitting, caps[fitting]))[0]])
            picks.append((tight, remaining))
            return picks
        take = int(caps[domain])
        if take <= 0:
            break
        picks.append((domain, take))
        remaining -= take
    return picks if remaining <= 0 else []


def kueue_best_fit(index: TopologyIndex, slots: IntArray, pods: int, preferred_level: int) -> IntArray | None:
    """Kueue's TAS BestFit for a preferred level (shared/reference/kueue.md §3).

    Phase 2a: at the requested level, sort domains by free pods descending; if the largest
    fits, take the smallest that still fits; otherwise retry one level up; at the top level
    fall back to several domains, largest first, tightest last. Phase 2b: at every lower level
    distribute over all children of the chosen domains the same way, down to the nodes.
    """
    caps = [np.add.reduceat(slots, starts) for starts in index.starts]
    level = preferred_level
    chosen: list[tuple[int, int]] = []
    while level >= 1:
        level_caps = caps[level]
        fitting = np.flatnonzero(level_caps >= pods)
        if len(fitting):
            tight = int(fitting[np.lexsort((fitting, level_caps[fitting]))[0]])
            chosen = [(tight, pods)]
            break
        if level == 1:
            chosen = _best_fit_pick(level_caps, np.arange(len(level_caps)), pods)
            if not chosen:
                return None
            break
        level -= 1
    last = index.depth - 1
    while level < last:
        child_caps = caps[level + 1]
        spans = [np.arange(index.child_lo[level][d], index.child_hi[level][d], dtype=np.int64) for d, _ in chosen]
        children = np.concatenate(spans)
        chosen = _best_fit_pick(child_caps, children, sum(count for _, count in chosen))
        if not chosen:
            return None
        level += 1
    chosen.sort()
    return np.repeat(np.array([d for d, _ in chosen], dtype=np.int64), np.array([c for _, c in chosen], dtype=np.int64))
