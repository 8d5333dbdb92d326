"""The two choices inside a placement: which domain holds the gang, which children it spans.

Lower bound (shared/reference/placement.md §7): with c(child) pods fitting per child domain,
the fewest children that can hold n pods is m* = the smallest m whose m largest capacities sum
to ≥ n. Taking largest-first gives m*; among the sets of that size we take, step by step, the
smallest child that still lets the remaining picks finish ("tightest fit"), so the large free
domains stay whole for the next gang.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np

from scheduler.topology.graph import IntArray

# Beyond this many picks the iterative tightest-fit costs more than it saves: fall back to
# Kueue's BestFit (largest first, the tightest last) which still spans exactly m* children.
_ITERATIVE_PICKS = 48
_NO_FIT = np.iinfo(np.int64).max  # a candidate whose children cannot hold the need


def fewest_tightest(caps: list[int], need: int) -> list[tuple[int, int]]:
    """Pick the fewest entries of ``caps`` holding ``need`` (tightest among those).

    Returns ``(position in caps, amount taken)``; amounts sum to ``need``. The caller checked
    that ``sum(caps) >= need``.
    """
    if need <= 0:
        return []
    positive = [i for i, c in enumerate(caps) if c > 0]
    if positive:
        low, high = min(caps[i] for i in positive), max(caps[i] for i in positive)
        if low == high:
            # all equal (whole free nodes for whole-node pods): the first ones in topology order
            firsts: list[tuple[int, int]] = []
            for i in positive:
                taken = min(high, need)
                firsts.append((i, taken))
                need -= taken
                if need == 0:
                    break
            return firsts
    order = sorted(positive, key=lambda i: (-caps[i], i))
    values = [caps[i] for i in order]
    total, m = 0, 0
    while total < need:
        total += values[m]
        m += 1
    if m == 1:
        # the tightest single entry: the last (smallest) value still >= need, first of its ties
        neg = [-v for v in values]
        j = bisect_right(neg, -need) - 1
        j = bisect_left(neg, -values[j])
        return [(order[j], need)]
    if m > _ITERATIVE_PICKS:
        return _largest_first_tight_last(order, values, m, need)
    picks: list[tuple[int, int]] = []
    remaining = need
    neg = [-v for v in values]
    while remaining > 0 and m > 0:
        head = sum(values[: m - 1])
        threshold = max(remaining - head, 1)  # m is minimal, so head < remaining
        # entries at or after m-1 are candidates; the last one >= threshold is the tightest
        j = bisect_right(neg, -threshold) - 1
        j = max(j, m - 1)
        j = bisect_left(neg, -values[j])  # first of equal values: topology order
        taken = min(values[j], remaining)
        picks.append((order[j], taken))
        remaining -= taken
        del order[j], values[j], neg[j]
        m -= 1
    return picks


def _largest_first_tight_last(order: list[int], values: list[int], m: int, need: int) -> list[tuple[int, int]]:
    picks = [(order[i], values[i]) for i in range(m - 1)]
    remaining = need - sum(values[: m - 1])
    neg = [-v for v in values]
    j = bisect_right(neg, -remaining) - 1
    j = max(j, m - 1)
    j = bisect_left(neg, -values[j], lo=m - 1)
    picks.append((order[j], remaining))
    return picks


def fewest_children(child_caps: IntArray, lo: IntArray, hi: IntArray, need: int) -> IntArray:
    """For each candidate domain (children ``lo[k]:hi[k]``), the fewest children holding ``need``.

    Vectorised over all candidates at once: one sort of (candidate, -capacity) keys, then
    per-segment running sums. A candidate whose children cannot hold ``need`` gets a count
    larger than any real one.
    """
    lengths = hi - lo
    total = int(np.add.reduce(lengths))
    if total == 0:
        return np.full(len(lo), _NO_FIT, dtype=np.int64)
    segment = np.arange(len(lo), dtype=np.int64).repeat(lengths)
    seg_first = lengths.cumsum() - lengths
    positions = np.arange(total, dtype=np.int64) - seg_first.repeat(lengths) + lo.repeat(lengths)
    values = child_caps[positions]
    top = int(np.maximum.reduce(values)) + 1
    if top <= 2 and need >= 1:
        # every child holds at most one unit (whole-node pods on their nodes, the common gang):
        # the fewest children holding ``need`` are exactly ``need`` wherever there is room, and
        # the sort below would only confirm it
        sums = np.add.reduceat(values, seg_first)
        return np.where(sums >= need, need, _NO_FIT).astype(np.int64)
    keys = segment * top + (top - 1 - values)
    keys.sort()  # a fresh array: sorted in place
    ordered = (top - 1) - (keys - segment * top)
    running = ordered.cumsum()
    before = np.where(seg_first > 0, running[np.maximum(seg_first - 1, 0)], 0)
    within = running - before.repeat(lengths)
    short = (within < need).astype(np.int64)
    counts = np.add.reduceat(short, seg_first) + 1
    sums = np.add.reduceat(values, seg_first)
    return np.where(sums >= need, counts, _NO_FIT).astype(np.int64)


def tightest_domain(caps: IntArray, candidates: IntArray, children: IntArray | None) -> int:
    """Among fitting ``candidates`` the one with the fewest children (if given), then the
    smallest capacity (tightest), then topology order."""
    if children is None:
        order = np.lexsort((candidates, caps[candidates]))
    else:
        order = np.lexsort((candidates, caps[candidates], children[candidates]))
    return int(candidates[order[0]])
