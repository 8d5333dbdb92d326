"""Which nodes hold how many pods of a shape, as one bitset per count.

The two questions a one-node pod set asks of 10,000 nodes, "what is the most any node holds"
and "which node, first in topology order, holds the fewest pods that still fit", would each scan
every node's slots. Slot counts take few distinct values (0–8 for GPU shapes), so each shape keeps,
for every positive count, a Python int whose bit ``i`` is set when node ``i`` holds exactly that
many: both answers then read a handful of dictionary keys and one lowest set bit, and a node whose
count changes moves one bit. Python's integers are arbitrary-precision bit arrays whose ``&``,
``^`` and negation run in C over machine words, so a 10,000-node bitset costs about a microsecond.
A change of many nodes at once (a large gang) marks the bitsets stale instead, and the next
question rebuilds them from the slots in a few numpy calls.
"""

from __future__ import annotations

import numpy as np

from scheduler.topology.graph import IntArray

# Beyond this many nodes changing at once, rebuilding on the next question is cheaper than moving
# each node's bit (a move costs about a microsecond, a rebuild a few tens).
MOVES_PER_CHANGE = 48
# Slot counts up to this are found by counting, above it by sorting.
_COUNTED_VALUES = 256


class SlotBits:
    """For one shape: slot count → bitset of the nodes (topology positions) holding exactly it.

    ``slots`` is the shape's live row of per-node slots, which the owner patches and then either
    reports node by node (``move``) or wholesale (``mark_stale``).
    """

    __slots__ = ("_by_count", "_slots", "_stale")

    def __init__(self, slots: IntArray) -> None:
        self._slots = slots
        self._by_count: dict[int, int] = {}
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
        for value in values.tolist():
            packed = np.packbits(slots == value, bitorder="little")
            self._by_count[int(value)] = int.from_bytes(packed.tobytes(), "little")
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
        if self._stale:
            return  # the rebuild will read the slots as they are then
        bit = 1 << node
        by_count = self._by_count
        if old > 0:
            left = by_count[old] ^ bit
            if left:
                by_count[old] = left
            else:
                del by_count[old]
        if new > 0:
            by_count[new] = by_count.get(new, 0) | bit

    def most(self) -> int:
        """The most pods any node holds (0 when none holds one)."""
        if self._stale:
            self._rebuild()
        return max(self._by_count) if self._by_count else 0

    def tightest(self, need: int) -> int:
        """The first node in topology order among those holding the fewest pods ≥ ``need``;
        -1 when none holds that many."""
        if self._stale:
            self._rebuild()
        fitting = [count for count in self._by_count if count >= need]
        if not fitting:
            return -1
        bits = self._by_count[min(fitting)]
        return (bits & -bits).bit_length() - 1
