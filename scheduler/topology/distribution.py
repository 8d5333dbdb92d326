"""Choosing the domain for a pod set and spreading its pods over the domain's children.

At the lowest tier where one domain can hold the pod set, the domain whose pods span the fewest
child domains wins, then the tightest; the pods then descend level by level onto the fewest,
tightest children. With a slice level, capacity above it is counted in whole slices.
Unconstrained pod sets skip all that and pack best-fit onto the fullest nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduler.topology.graph import IntArray, TopologyIndex
from scheduler.topology.model import PlacementFailure, PodSetRequest
from scheduler.topology.search import fewest_children, fewest_tightest, tightest_domain
from scheduler.topology.shapes import ShapeCounts

_NO_FIT = np.iinfo(np.int64).max


@dataclass(frozen=True)
class PodSetLevels:
    """A pod set's levels as internal indices (0 = the whole flavor)."""

    top: int  # the highest level the single holding domain may be at
    required: bool
    slice_level: int | None
    slice_size: int

    def unit(self, level: int) -> int:
        """Pods per unit at ``level``: a slice at or above the slice level, else one pod."""
        if self.slice_level is not None and level <= self.slice_level:
            return self.slice_size
        return 1


def resolve_levels(index: TopologyIndex, ps: PodSetRequest, where: str) -> PodSetLevels | PlacementFailure:
    """The pod set's required/preferred/slice levels as indices, or why they are unusable.
    ``where`` names the Topology and flavor in messages."""
    accepted = ", ".join(index.levels)

    def index_of(label: str, what: str) -> int | PlacementFailure:
        found = index.level_index(label)
        if found is None:
            return PlacementFailure(
                f"pod set {ps.name!r}: {what} level {label!r} is not a level of {where}; use one of: {accepted}",
                ps.name,
            )
        return found

    top, required = 0, False
    if ps.required_level is not None:
        got = index_of(ps.required_level, "required")
        if isinstance(got, PlacementFailure):
            return got
        top, required = got, True
    elif ps.preferred_level is not None:
        got = index_of(ps.preferred_level, "preferred")
        if isinstance(got, PlacementFailure):
            return got
    slice_level: int | None = None
    size = max(ps.slice_size, 1)
    if ps.slice_level is not None and size > 1:
        got = index_of(ps.slice_level, "slice")
        if isinstance(got, PlacementFailure):
            return got
        if got < top:
            return PlacementFailure(
                f"pod set {ps.name!r}: slice level {ps.slice_level} is above required level "
                f"{ps.required_level}; a slice level must be at or below the required level",
                ps.name,
            )
        if ps.count % size:
            return PlacementFailure(
                f"pod set {ps.name!r}: count {ps.count} is not a multiple of slice size {size}",
                ps.name,
            )
        slice_level = got
    return PodSetLevels(top, required, slice_level, size if slice_level is not None else 1)


class Distributor:
    """Domain choice and distribution over one topology index (rebuilt with it)."""

    def __init__(self, index: TopologyIndex) -> None:
        self.index = index
        self._first_at: dict[tuple[int, int], IntArray] = {}

    def unit_caps(self, counts: ShapeCounts, level: int, levels: PodSetLevels) -> IntArray:
        """Per domain at ``level``, in the level's unit: whole slices at or above the slice
        level, pods below it (inside one slice domain every slice is already in one)."""
        ls, size = levels.slice_level, levels.slice_size
        if ls is None or level > ls:
            return counts.caps[level]
        if level == ls:
            return counts.caps[level] // size
        first = self._first_at.get((level, ls))
        if first is None:
            first = self.index.node_domain[ls][self.index.starts[level]]
            self._first_at[(level, ls)] = first
        return np.add.reduceat(counts.caps[ls] // size, first)

    def most_units(self, counts: ShapeCounts, level: int, levels: PodSetLevels, caps: IntArray, version: int) -> int:
        """The most units one domain of ``level`` holds (``caps``: ``unit_caps``); counted in pods,
        the shape's counts remember it while the state stays at ``version``."""
        if levels.slice_level is None:
            return counts.most(level, version)
        return int(np.maximum.reduce(caps)) if len(caps) else 0

    def choose_domain(self, counts: ShapeCounts, level: int, caps: IntArray, need: int, levels: PodSetLevels) -> int:
        """Among the domains at ``level`` with room for ``need`` units: fewest children, tightest."""
        if level == self.index.depth - 1:
            # one node holds the pod set: the tightest that fits, first in topology order
            if levels.unit(level) == 1:
                # counted in pods: the shape's bitsets name that node without a scan
                return counts.leaf.tightest(need)
            # in slices: the tightest by a masked argmin (which keeps the first of equal values);
            # an exact fit is the tightest there is, found by a short-circuiting argmax
            exact = caps == need
            first = int(exact.argmax())
            if exact[first]:
                return first
            return int(np.where(caps >= need, caps, _NO_FIT).argmin())
        candidates = (caps >= need).nonzero()[0]
        if len(candidates) == 1:
            return int(candidates[0])
        child = level + 1
        child_need = need * levels.unit(level) // levels.unit(child)
        spans = fewest_children(
            self.unit_caps(counts, child, levels),
            self.index.child_lo[level][candidates],
            self.index.child_hi[level][candidates],
            child_need,
        )
        full_spans = np.empty(len(caps), dtype=np.int64)
        full_spans.fill(_NO_FIT)
        full_spans[candidates] = spans
        return tightest_domain(caps, candidates, full_spans)

    def no_room(
        self, flavor_name: str, ps: PodSetRequest, levels: PodSetLevels, counts: ShapeCounts
    ) -> PlacementFailure:
        """Why no domain at or below the pod set's top level holds it, with the most room there is."""
        index = self.index
        what = f"{ps.count} pods × {ps.describe_pod()}"
        if levels.slice_level is not None:
            slice_label = index.level_names[levels.slice_level]
            what = (
                f"{ps.count // levels.slice_size} slices of {levels.slice_size} pods × "
                f"{ps.describe_pod()}, each slice in one {slice_label}"
            )
        caps = self.unit_caps(counts, levels.top, levels)
        room = int(np.maximum.reduce(caps)) if len(caps) else 0
        unit = "slices" if levels.slice_level is not None else "pods"
        if levels.required:
            label = index.level_names[levels.top]
            return PlacementFailure(
                f"pod set {ps.name!r} needs {what} in one {label}; the largest {short(label)} "
                f"has room for {room} {unit}",
                ps.name,
            )
        return PlacementFailure(
            f"pod set {ps.name!r} needs {what}; flavor {flavor_name!r} has room for {room} {unit}",
            ps.name,
        )

    def distribute(
        self,
        counts: ShapeCounts,
        level: int,
        domain: int,
        need: int,
        levels: PodSetLevels,
        out: Picked,
    ) -> None:
        """Spread ``need`` units of ``domain`` over its fewest, tightest children, down to nodes;
        records the (node, pods) picks in ``out``."""
        last = self.index.depth - 1
        if level == last:
            out.pairs.append((domain, need * levels.unit(level)))
            return
        if levels.slice_level is None and need == int(counts.caps[level][domain]):
            # The gang takes all of this domain: every child holds exactly its capacity, so every
            # node with room gives all its slots (what the tightest-fit descent would pick, one
            # child at a time); big gangs fill whole zones and spines this way.
            out.ranges.append((int(self.index.starts[level][domain]), int(self.index.ends[level][domain])))
            return
        child = level + 1
        lo = int(self.index.child_lo[level][domain])
        hi = int(self.index.child_hi[level][domain])
        child_need = need * levels.unit(level) // levels.unit(child)
        caps = self.unit_caps(counts, child, levels)[lo:hi].tolist()
        picks = fewest_tightest(caps, child_need)
        if child == last:
            unit = levels.unit(child)
            out.pairs.extend((lo + offset, amount * unit) for offset, amount in picks)
            return
        for offset, amount in picks:
            self.distribute(counts, child, lo + offset, amount, levels, out)


def short(label: str | None) -> str:
    """``network.topology.nvidia.com/block`` → ``block``."""
    return "flavor" if label is None else label.rsplit("/", 1)[-1]


@dataclass(init=False)
class Picked:
    """Where ``Distributor.distribute`` put a pod set's pods: (node, pods) pairs, and node ranges
    ``[start, end)`` of domains taken whole (each node there holds ``slots[node]`` pods)."""

    slots: IntArray
    pairs: list[tuple[int, int]]
    ranges: list[tuple[int, int]]

    # mypyc: CONTRIBUTING.md
    def __init__(self, slots: IntArray) -> None:
        self.slots = slots
        self.pairs = []
        self.ranges = []

    def expand(self) -> IntArray:
        """One node per rank, ranks in topology (node index) order."""
        if not self.ranges:
            return expand(self.pairs)
        if len(self.ranges) == 1 and not self.pairs:
            # one domain taken whole (the usual gang): its nodes are already in order
            start, end = self.ranges[0]
            held = self.slots[start:end]
            holding = held > 0
            return np.arange(start, end, dtype=np.int64)[holding].repeat(held[holding])
        whole = np.concatenate([np.arange(start, end, dtype=np.int64) for start, end in self.ranges])
        whole = whole[self.slots[whole] > 0]
        nodes = np.concatenate([np.array([p[0] for p in self.pairs], dtype=np.int64), whole])
        repeats = np.concatenate([np.array([p[1] for p in self.pairs], dtype=np.int64), self.slots[whole]])
        order = nodes.argsort(kind="stable")  # nodes are distinct: domains do not overlap
        return nodes[order].repeat(repeats[order])


def pack_best_fit(slots: IntArray, ps: PodSetRequest) -> IntArray | None:
    """Unconstrained: the tightest single node if one holds all, else fullest nodes first.
    One node position per pod, or None when the flavor has too little room in total."""
    total = int(np.add.reduce(slots))
    if total < ps.count:
        return None
    fits = (slots >= ps.count).nonzero()[0]
    if len(fits):
        node = tightest_domain(slots, fits, None)
        return np.full(ps.count, node, dtype=np.int64)
    candidates = (slots > 0).nonzero()[0]
    order = candidates[slots[candidates].argsort(kind="stable")]
    running = slots[order].cumsum()
    used = int(np.searchsorted(running, ps.count)) + 1
    chosen = order[:used]
    amounts = slots[chosen].copy()
    amounts[-1] -= int(running[used - 1]) - ps.count
    return expand(sorted(zip(chosen.tolist(), amounts.tolist(), strict=True)))


def expand(picked: list[tuple[int, int]]) -> IntArray:
    """(node, pods) pairs → one node per rank, ranks in topology (node index) order."""
    if not picked:
        return np.zeros(0, dtype=np.int64)
    picked.sort()
    nodes = np.array([p[0] for p in picked], dtype=np.int64)
    repeats = np.array([p[1] for p in picked], dtype=np.int64)
    return nodes.repeat(repeats)
