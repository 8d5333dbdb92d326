"""Which nodes hold how many pods of a shape, as one bitset per count.

The two questions a one-node pod set asks of 10,000 nodes, "what is the most any node holds"
and "which node, first in topology order, holds the fewest pods that still fit", would each scan
every node's slots. Slot counts take few distinct values (0–8 for GPU shapes), so each shape keeps,
for every positive count, a bitset whose bit ``i`` is set when node ``i`` holds exactly that many:
both answers then read a handful of dictionary keys and one lowest set bit, and a node whose count
changes moves one bit. A bitset is a list of 512-bit Python ints (chunks) plus one small int that
marks the chunks with any bit set: a move rewrites one chunk (a 64-byte integer, from Python's
small-object allocator) instead of a 10,000-bit one (1.25 kB allocated and copied per ``^`` or
``|``), and the lowest set bit is the lowest marked chunk's lowest bit.
A change of many nodes at once (a large gang) marks the bitsets stale instead, and the next
question rebuilds them from the slots in a few numpy calls.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from scheduler.topology.graph import IntArray

# Beyond this many nodes changing at once, rebuilding on the next question is cheaper than moving
# each node's bit (a move costs a fraction of a microsecond, a rebuild of 10,000 nodes about a
# hundred: one per count that occurs, each rebuilding its chunks).
MOVES_PER_CHANGE: Final = 256
# Slot counts up to this are found by counting, above it by sorting.
_COUNTED_VALUES: Final = 256
# A bitset's chunks: 512 bits (64 bytes) each, small enough for the small-object allocator.
# (Final: compiled, they are constants rather than module lookups)
CHUNK_SHIFT: Final = 9
CHUNK_MASK: Final = (1 << CHUNK_SHIFT) - 1
_CHUNK_BYTES: Final = (1 << CHUNK_SHIFT) // 8


class _NodeSet:
    """One bitset over the nodes: its chunks, and the mask of chunks that hold a set bit."""

    __slots__ = ("chunks", "occupied")

    def __init__(self, chunks: list[int], occupied: int) -> None:
        self.chunks = chunks
        self.occupied = occupied

    def first(self) -> int:
        """The lowest node in the set (the set is never empty: empty sets are dropped)."""
        occupied = self.occupied
        chunk = (occupied & -occupied).bit_length() - 1
        bits = self.chunks[chunk]
        return (chunk << CHUNK_SHIFT) + (bits & -bits).bit_length() - 1

    def firsts(self, most: int, classes: list[int], per_class: int, class_count: int) -> list[int]:
        """The lowest nodes in the set, lowest first: the first ``per_class`` of each class
        (``classes[node]``; ``per_class`` 0: every one) among the lowest ``most``; the walk stops
        once each of the ``class_count`` classes has its ``per_class``."""
        found: list[int] = []
        taken: dict[int, int] = {}
        full = 0
        seen = 0
        occupied = self.occupied
        while occupied and seen < most:
            low_chunk = occupied & -occupied
            occupied ^= low_chunk
            chunk = low_chunk.bit_length() - 1
            bits = self.chunks[chunk]
            while bits and seen < most:
                low = bits & -bits
                bits ^= low
                seen += 1
                node = (chunk << CHUNK_SHIFT) + low.bit_length() - 1
                if per_class <= 0:
                    found.append(node)
                    continue
                kind = classes[node]
                count = taken.get(kind, 0)
                if count < per_class:
                    taken[kind] = count + 1
                    found.append(node)
                    if count + 1 == per_class:
                        full += 1
                        if full == class_count:
                            return found
        return found


class SlotBits:
    """For one shape: slot count → bitset of the nodes (topology positions) holding exactly it.

    ``slots`` is the shape's live row of per-node slots, which the owner patches and then either
    reports node by node (``move``) or wholesale (``mark_stale``).
    """

    __slots__ = ("_by_count", "_chunk_count", "_slots", "_stale")

    def __init__(self, slots: IntArray) -> None:
        self._slots = slots
        self._chunk_count = (len(slots) + CHUNK_MASK) >> CHUNK_SHIFT
        self._by_count: dict[int, _NodeSet] = {}
        self._stale = True

    def _rebuild(self) -> None:
        slots = self._slots
        self._by_count = {}
        top = int(np.maximum.reduce(slots)) if len(slots) else 0
        if top <= _COUNTED_VALUES:
            # small counts (GPU shapes): which occur, by a count per value rather than a sort
            values = np.bincount(slots, minlength=top + 1)[1:].nonzero()[0] + 1
        else:
            values = np.unique(slots)
            values = values[values > 0]
        chunk_count = self._chunk_count
        counts: list[int] = values.tolist()
        if not counts:
            self._stale = False
            return
        # one bit row per count, padded to whole chunks, packed and split in a handful of calls
        rows = np.zeros((len(counts), chunk_count << CHUNK_SHIFT), dtype=np.bool_)
        np.equal(slots[None, :], values[:, None], out=rows[:, : len(slots)])
        packed = np.packbits(rows, axis=1, bitorder="little")
        holding = np.logical_or.reduce(packed.reshape(len(counts), chunk_count, _CHUNK_BYTES) != 0, axis=2)
        occupied_chunks: list[list[int]] = [[] for _ in counts]
        for k, chunk in zip(*(axis.tolist() for axis in np.nonzero(holding)), strict=True):
            occupied_chunks[k].append(chunk)
        raw = packed.tobytes()
        row_bytes = chunk_count * _CHUNK_BYTES
        for k, value in enumerate(counts):
            chunks = [0] * chunk_count
            occupied = 0
            base = k * row_bytes
            for chunk in occupied_chunks[k]:
                start = base + chunk * _CHUNK_BYTES
                chunks[chunk] = int.from_bytes(raw[start : start + _CHUNK_BYTES], "little")
                occupied |= 1 << chunk
            self._by_count[value] = _NodeSet(chunks, occupied)
        self._stale = False

    @property
    def stale(self) -> bool:
        """Whether the next question rebuilds the bitsets (``move`` is then a no-op)."""
        return self._stale

    def mark_stale(self) -> None:
        """Many nodes changed: rebuild from the slots when next asked."""
        self._stale = True

    def move(self, node: int, old: int, new: int) -> None:
        """Node ``node`` held ``old`` pods of the shape and now holds ``new`` (``old != new``)."""
        self.move_chunk(node >> CHUNK_SHIFT, 1 << (node & CHUNK_MASK), old, new)

    def move_many(self, nodes: list[int], before: list[int], after: list[int]) -> None:
        """``move`` for each node ``nodes[j]`` whose count went from ``before[j]`` to ``after[j]``
        (equal counts: no move), gathered into one ``move_chunk`` per run of nodes that share a
        chunk and go between the same counts (a gang on empty nodes: one run per chunk)."""
        if self._stale:
            return
        # the run being gathered: its chunk, counts before and after, and its nodes' bits (0: none)
        run_chunk, run_before, run_after, run_bits = 0, 0, 0, 0
        # by position over typed lists: compiled, the comparisons are on machine integers
        for j in range(len(nodes)):
            old, new = before[j], after[j]
            if old == new:
                continue
            node = nodes[j]
            chunk = node >> CHUNK_SHIFT
            if run_bits and chunk == run_chunk and old == run_before and new == run_after:
                run_bits |= 1 << (node & CHUNK_MASK)
                continue
            if run_bits:
                self.move_chunk(run_chunk, run_bits, run_before, run_after)
            run_chunk, run_before, run_after, run_bits = chunk, old, new, 1 << (node & CHUNK_MASK)
        if run_bits:
            self.move_chunk(run_chunk, run_bits, run_before, run_after)

    def move_chunk(self, chunk: int, bits: int, old: int, new: int) -> None:
        """``move`` for several nodes of one chunk at once: ``bits`` marks them within chunk
        ``chunk`` (a gang's nodes are neighbours, so most of a gang's moves share one chunk);
        every one of them held ``old`` pods and now holds ``new``."""
        if self._stale:
            return  # the rebuild will read the slots as they are then
        by_count = self._by_count
        if old > 0:
            held = by_count[old]
            left = held.chunks[chunk] ^ bits
            held.chunks[chunk] = left
            if not left:
                held.occupied ^= 1 << chunk
                if not held.occupied:
                    del by_count[old]
        if new > 0:
            held_new = by_count.get(new)
            if held_new is None:
                held_new = by_count[new] = _NodeSet([0] * self._chunk_count, 0)
            present = held_new.chunks[chunk]
            if not present:
                held_new.occupied |= 1 << chunk
            held_new.chunks[chunk] = present | bits

    def most(self) -> int:
        """The most pods any node holds (0 when none holds one)."""
        if self._stale:
            self._rebuild()
        return max(self._by_count) if self._by_count else 0

    def holding(self, need: int) -> int:
        """How many nodes hold at least ``need`` pods."""
        if self._stale:
            self._rebuild()
        total = 0
        for count, members in self._by_count.items():
            if count >= need:
                for chunk in members.chunks:
                    total += chunk.bit_count()
        return total

    def candidates(
        self, need: int, classes: list[int], per_class: int, scan: int, class_count: int
    ) -> tuple[list[int], list[int]]:
        """Nodes holding at least ``need`` pods, a few of each kind: for each such count, among its
        first ``scan`` nodes in topology order, the first ``per_class`` of each of the
        ``class_count`` node classes (``classes[node]``; ``per_class`` 0: every node). Returns
        (nodes, the count each holds)."""
        if self._stale:
            self._rebuild()
        nodes: list[int] = []
        held: list[int] = []
        for count, members in self._by_count.items():
            if count >= need:
                firsts = members.firsts(scan, classes, per_class, class_count)
                nodes.extend(firsts)
                held.extend([count] * len(firsts))
        return nodes, held

    def tightest(self, need: int) -> int:
        """The first node in topology order among those holding the fewest pods ≥ ``need``;
        -1 when none holds that many."""
        if self._stale:
            self._rebuild()
        fitting = [count for count in self._by_count if count >= need]
        if not fitting:
            return -1
        return self._by_count[min(fitting)].first()
