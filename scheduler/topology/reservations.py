"""The pods of reserved gang placements, as node positions and usage on one capacity state.

The engine reserves each placement it admits and releases it when the workload ends; a
preemption search takes reserved placements out and puts them back many times per cycle. Each
reserved placement's positions and usage are worked out once (from the placer's own answer when
it is the one just placed, else from its node names) and kept until it is released.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from scheduler.topology.capacity import CapacityState
from scheduler.topology.graph import IntArray, TopologyIndex
from scheduler.topology.model import GangPlacement, PodSetRequest

_VECTORS_KEPT = 1024


class Reservations:
    """Reserve, release and shift placements on ``state`` (positions of ``index``)."""

    def __init__(self, state: CapacityState, index: TopologyIndex) -> None:
        self.state = state
        self.index = index
        self._vectors: dict[int, tuple[PodSetRequest, IntArray]] = {}  # id(request) -> (request, per-pod usage)
        # the last placement made, with its pod sets' node positions: the engine reserves what it
        # was just given, and these save looking every node up by name again
        self._last_placed: tuple[GangPlacement, list[IntArray]] | None = None
        # id(reserved placement) -> (placement, node positions, usage, ascending): kept while
        # reserved (positions stay valid until the placer rebuilds, which makes a new Reservations)
        self._usage_cache: dict[int, tuple[GangPlacement, IntArray, IntArray, bool]] = {}

    def placed(self, placement: GangPlacement, positions: list[IntArray]) -> None:
        """The placer just made ``placement``; ``positions`` are its pod sets' nodes."""
        self._last_placed = (placement, positions)

    def _placement_usage(self, placement: GangPlacement, *, strict: bool) -> tuple[IntArray, IntArray, bool]:
        """(node positions, resources × pods, whether the positions are strictly ascending) of a
        placement's pods; reserved ones are cached."""
        cached = self._usage_cache.get(id(placement))
        if cached is not None and cached[0] is placement:
            return cached[1], cached[2], cached[3]
        last = self._last_placed
        placed = last[1] if last is not None and last[0] is placement else None
        if placed is not None and len(placed) == 1:
            # the placer's own answer for one pod set (the usual gang): its positions as they are
            nodes = placed[0].copy()
            count = len(nodes)
            vector = self._amounts_vector(placement.pod_sets[0].request)[:, None]
            if count == 1:  # one pod (most gangs): the cached vector's column view, never written
                return nodes, vector, True
            in_order = bool(np.logical_and.reduce(nodes[1:] > nodes[:-1]))
            return nodes, vector.repeat(count, axis=1), in_order
        positions: list[int] = []
        blocks: list[IntArray] = []
        for k, ps in enumerate(placement.pod_sets):
            vector = self._amounts_vector(ps.request)
            found: list[int | None] = (
                placed[k].tolist() if placed is not None else [self.index.position.get(name) for name in ps.nodes]
            )
            if strict and None in found:
                name = ps.nodes[found.index(None)]
                raise ValueError(
                    f"placement on flavor {placement.flavor!r} names node {name}, which is not "
                    "in the flavor any more; place the gang again"
                )
            kept = [f for f in found if f is not None]  # a node that left the flavor gives nothing back
            positions.extend(kept)
            blocks.append(vector[:, None].repeat(len(kept), axis=1))
        if not positions:
            return np.zeros(0, dtype=np.int64), np.zeros((len(self.state.resources), 0), dtype=np.int64), True
        # one pod per node in topology order (the usual gang) needs no merging of repeated nodes
        ascending = all(a < b for a, b in pairwise(positions))
        delta = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)
        return np.array(positions, dtype=np.int64), delta, ascending

    def _amounts_vector(self, request: PodSetRequest) -> IntArray:
        """``state.amounts_vector`` of one pod of ``request`` (read-only), kept per request."""
        known = self._vectors.get(id(request))
        if known is not None and known[0] is request:
            return known[1]
        vector = self.state.amounts_vector(request.requests)
        vector.flags.writeable = False  # shared by every placement of the request (and their deltas)
        if len(self._vectors) >= _VECTORS_KEPT:
            self._vectors.clear()
        self._vectors[id(request)] = (request, vector)
        return vector

    def reserve(self, placement: GangPlacement) -> None:
        """Take the placement's pods from the free capacity (ValueError if that overcommits)."""
        nodes, delta, ascending = self._placement_usage(placement, strict=True)
        if not len(nodes):
            return
        if self.state.apply(nodes, delta, ascending=ascending, frees=False, report_overcommit=True):
            self._refuse_overcommit(placement, nodes, delta, ascending)
        # kept while reserved (positions stay valid until the next rebuild): preemption moves
        # reserved gangs out and back in many times per cycle
        self._usage_cache[id(placement)] = (placement, nodes, delta, ascending)

    def _refuse_overcommit(self, placement: GangPlacement, nodes: IntArray, delta: IntArray, ascending: bool) -> None:
        """A node the placement took from went below zero: undo and refuse when the placement
        itself asked for what is short there (a node already short of something it does not
        take, such as one whose allocatable shrank, does not make the placement wrong)."""
        if ascending:
            touched, added = nodes, delta  # distinct nodes in topology order: nothing to merge
        else:
            touched, inverse = np.unique(nodes, return_inverse=True)
            added = np.zeros((delta.shape[0], len(touched)), dtype=np.int64)
            np.add.at(added.T, inverse, delta.T)
        over = (self.state.free[:, touched] < 0) & (added > 0)
        if np.count_nonzero(over):
            self.state.apply(nodes, -delta, ascending=ascending, frees=True)
            bad = self.index.names[int(touched[np.flatnonzero(over.any(axis=0))[0]])]
            raise ValueError(
                f"placement on flavor {placement.flavor!r} no longer fits: node {bad} would be "
                "overcommitted; place the gang again"
            )

    def shift(self, placements: Sequence[GangPlacement], sign: int) -> None:
        """Take reserved ``placements`` out (sign -1) or put them back (sign +1) in one update,
        without the overcommit check: for asking "would it fit with these gangs gone" and
        undoing that exactly. Nodes no longer in the flavor are skipped both ways."""
        parts = [self._placement_usage(p, strict=False) for p in placements]
        parts = [part for part in parts if len(part[0])]
        if len(parts) == 1:
            nodes, delta, ascending = parts[0]
            self.state.apply(nodes, sign * delta, ascending=ascending, frees=sign < 0)
        elif parts:
            nodes = np.concatenate([part[0] for part in parts])
            delta = np.concatenate([part[1] for part in parts], axis=1)
            self.state.apply(nodes, sign * delta, frees=sign < 0)

    def holds_any(self, placement: GangPlacement, start: int, end: int) -> bool:
        """Whether ``placement`` has a pod on a node at positions [start, end)."""
        nodes, _, ascending = self._placement_usage(placement, strict=False)
        if not len(nodes):
            return False
        if ascending and (int(nodes[-1]) < start or int(nodes[0]) >= end):
            return False  # in topology order: wholly before or after the range
        return bool(np.logical_or.reduce((nodes >= start) & (nodes < end)))

    def release(self, placement: GangPlacement) -> None:
        """Give the placement's pods back (the workload finished or was evicted)."""
        nodes, delta, ascending = self._placement_usage(placement, strict=False)
        cached = self._usage_cache.get(id(placement))
        if cached is not None and cached[0] is placement:
            del self._usage_cache[id(placement)]
        if len(nodes):
            self.state.apply(nodes, -delta, ascending=ascending, frees=True)
