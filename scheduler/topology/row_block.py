"""The block a multi-node capacity change patches: the cached shapes' rows × the changed nodes.

``CapacityState._refresh`` recounts that block with a handful of numpy calls, and at this size
each call's fixed cost outweighs its arithmetic. So what it needs of the rows is gathered once
per set of cached shapes (``ActiveRows``), and rows or nodes that are consecutive are indexed as
slices (views) rather than by index arrays (copies).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.topology.graph import IntArray

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
