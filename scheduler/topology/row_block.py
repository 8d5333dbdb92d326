"""The block a multi-node capacity change patches: the cached shapes' rows × the changed nodes.

``CapacityState._refresh`` recounts that block with a handful of numpy calls, and at this size
each call's fixed cost outweighs its arithmetic. So what it needs of the rows is gathered once
per set of cached shapes (``ActiveRows``), and rows or nodes that are consecutive are indexed as
slices (views) rather than by index arrays (copies). ``carry_moves`` carries the block's slot
changes into the shapes' bitsets (``leaf_index``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.topology.graph import IntArray
from scheduler.topology.leaf_index import MOVES_PER_CHANGE, SlotBits

BoolArray = npt.NDArray[np.bool_]


def consecutive(nodes: IntArray) -> slice | IntArray:
    """Strictly ascending node positions as a slice when they are consecutive (a gang on
    neighbouring nodes), which indexes a view instead of copying; else the positions."""
    first, last = int(nodes[0]), int(nodes[-1])
    return slice(first, last + 1) if last - first + 1 == len(nodes) else nodes


class ActiveRows:
    """The cached shapes' divisors and flags for the rows in use, shaped for broadcasting against
    a block of nodes (shapes × resources × nodes)."""

    def __init__(
        self,
        rows: IntArray,
        divisors: IntArray,
        unrequested: BoolArray,
        asks_nothing: BoolArray,
        feasible: BoolArray,
        row_masks: BoolArray,
    ) -> None:
        self.rows_column = rows[:, None]
        # the rows as a slice when they are consecutive (rows are handed out lowest first, so
        # they are unless a shape was evicted)
        first, count = (int(rows[0]), len(rows)) if len(rows) else (0, 0)
        self.row_span = slice(first, first + count) if count and int(rows[-1]) == first + count - 1 else None
        self.divisors = divisors[rows][:, :, None]
        self.unrequested = unrequested[rows][:, :, None]
        self.asks_nothing = asks_nothing[rows][:, None]
        self.feasible = feasible[rows][:, None]
        # the usual case, which skips the masking steps: every shape asks for every resource,
        # is feasible and may run on every node
        self.any_asks_nothing = bool(np.logical_or.reduce(asks_nothing[rows]))
        self.all_requested = not bool(np.logical_or.reduce(unrequested[rows], axis=None))
        self.unmasked = bool(np.logical_and.reduce(feasible[rows])) and bool(
            np.logical_and.reduce(row_masks[rows], axis=None)
        )


def carry_moves(bits: list[SlotBits | None], nodes: IntArray, old: IntArray, fresh: IntArray, change: IntArray) -> None:
    """Carry a block's slot changes (shapes × nodes, one ``bits`` per shape) into the bitsets."""
    kept = [k for k, row_bits in enumerate(bits) if row_bits is not None and not row_bits.stale]
    if not kept:
        return  # nobody asked since the last rebuild (t*'s ledger never does): nothing to keep
    positions: list[int] = nodes.tolist()
    # moves per row, counted only when there could be too many to make
    moved: list[int] | None = None
    if len(positions) > MOVES_PER_CHANGE:
        moved = np.add.reduce(change != 0, axis=1).tolist()
    before_rows: list[list[int]] = old.tolist()
    after_rows: list[list[int]] = fresh.tolist()
    for k in kept:
        row_bits = bits[k]
        assert row_bits is not None  # kept above
        if moved is not None and moved[k] > MOVES_PER_CHANGE:
            row_bits.mark_stale()  # rebuilt when next asked, if ever
            continue
        row_bits.move_many(positions, before_rows[k], after_rows[k])
