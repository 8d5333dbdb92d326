"""One node's capacity, read and written element by element: the one-node path of a change.

Most reservations and releases touch one node, and for a handful of cached shapes numpy's
per-call cost would dominate. ``NodeCells`` holds the same memory as ``CapacityState``'s arrays
(free amounts, per-shape slots, per-domain sums) as flat memoryviews: a memoryview reads or
writes one element in a fraction of what indexing a numpy array costs, and a flat one indexed by
one int (row × width + column) in a third of what a (row, column) tuple index costs. It computes
exactly what ``CapacityState``'s vectorized refresh does, for one node.
"""

from __future__ import annotations

import numpy as np

from scheduler.topology.graph import IntArray
from scheduler.topology.leaf_index import SlotBits

# slots of a shape that asks for nothing: bounded only by eligibility
UNBOUNDED_SLOTS = 1 << 40
# per cached shape: (its row, the (resource, amount) pairs it requests or None when it asks for
# nothing, whether it is feasible, its slot bitsets)
RowTerms = tuple[int, list[tuple[int, int]] | None, bool, SlotBits]


def slots_held(free: list[int], requested: list[tuple[int, int]] | None, may_run: bool) -> int:
    """How many pods of a shape a node holds with ``free`` (its free amounts, floored at 0): none
    where the shape may not run, unbounded for a shape that asks for nothing, else the fewest any
    requested resource allows (a loop: compiled, no list or min call)."""
    if not may_run:
        return 0
    if requested is None:
        return UNBOUNDED_SLOTS
    fresh = -1
    for r, amount in requested:
        allowed = free[r] // amount
        if fresh < 0 or allowed < fresh:
            fresh = allowed
    return fresh


def _flat(array: IntArray) -> memoryview:
    """A C-contiguous array's memory as one flat memoryview of its elements (a view, not a copy)."""
    flat = array.reshape(-1)
    assert np.shares_memory(flat, array) or not array.size  # C-contiguous: reshaping copies nothing
    return flat.data


class NodeCells:
    """``free`` (resources × nodes), ``slot_rows`` (shapes × nodes) and ``cap_rows`` (per level,
    shapes × domains) as flat memoryviews, with each node's domain per level. The arrays must be
    C-contiguous and never replaced (their owner writes into them)."""

    def __init__(
        self, free: IntArray, slot_rows: IntArray, cap_rows: list[IntArray], domain_of: list[list[int]]
    ) -> None:
        self.node_count = free.shape[1]
        self._free = _flat(free)
        self._slots = _flat(slot_rows)
        self._caps = [_flat(caps) for caps in cap_rows]
        self._cap_widths = [caps.shape[1] for caps in cap_rows]
        self.domain_of = domain_of  # per level, each node's domain (the index's, shared)

    def free_at(self, i: int) -> tuple[int, ...]:
        """Node ``i``'s free amounts, resource by resource."""
        cells, n = self._free, self.node_count
        return tuple([cells[resource * n + i] for resource in range(len(cells) // n)]) if n else ()

    def take(self, i: int, amounts: list[int]) -> tuple[list[int], bool]:
        """``used[:, i] += amounts``: node ``i``'s free amounts after it, floored at 0, and
        whether one of them went negative."""
        cells, n = self._free, self.node_count
        free: list[int] = []
        negative = False
        for resource, amount in enumerate(amounts):
            cell = resource * n + i
            left: int = cells[cell]
            if amount:
                left -= amount
                cells[cell] = left
            if left < 0:
                negative = True
                left = 0
            free.append(left)
        return free, negative

    def refresh(self, i: int, free: list[int], rows: list[RowTerms], masks: list[bool] | None) -> None:
        """Recount node ``i``'s slots for every cached shape from its free amounts (floored at 0),
        moving its bits and patching the domain sums where a count changed. ``masks`` holds
        whether each shape may run on the node (None: every shape may)."""
        slot_cells, n = self._slots, self.node_count
        # the node's domain at every level, and the sums' flat layout, read once for all rows
        levels = list(zip(self._caps, self._cap_widths, [domain_of[i] for domain_of in self.domain_of], strict=True))
        for row, requested, feasible, row_bits in rows:
            fresh = slots_held(free, requested, masks is None or (feasible and masks[row]))
            cell = row * n + i
            before: int = slot_cells[cell]
            if fresh != before:
                slot_cells[cell] = fresh
                row_bits.move(i, before, fresh)
                change = fresh - before
                for cells, width, domain in levels:
                    cells[row * width + domain] += change

    def refresh_run(
        self, nodes: list[int], frees: list[list[int]], rows: list[RowTerms], masks: list[list[bool]] | None
    ) -> None:
        """``refresh`` of a few distinct nodes in topology order (a small gang), shape by shape:
        each shape's bits move run by run (``SlotBits.move_many``) and each domain sum is patched
        once per run of neighbours in that domain rather than once per node. ``frees[j]`` is node
        ``nodes[j]``'s free amounts floored at 0; ``masks[row][j]`` whether the shape of ``row``
        may run on it (None: every shape may run everywhere)."""
        slot_cells, n = self._slots, self.node_count
        count = len(nodes)
        first, last = nodes[0], nodes[-1]
        for row, requested, feasible, row_bits in rows:
            before: list[int] = []
            after: list[int] = []
            total = 0  # the row's change over all the nodes
            row_masks = masks[row] if masks is not None else None
            for j in range(count):
                i = nodes[j]
                fresh = slots_held(frees[j], requested, row_masks is None or (feasible and row_masks[j]))
                cell = row * n + i
                old: int = slot_cells[cell]
                if fresh != old:
                    slot_cells[cell] = fresh
                    total += fresh - old
                before.append(old)
                after.append(fresh)
            row_bits.move_many(nodes, before, after)
            for cells, width, domain_of in zip(self._caps, self._cap_widths, self.domain_of, strict=True):
                if domain_of[first] == domain_of[last]:
                    # in topology order, so all in that one domain (a gang inside one block)
                    if total:
                        cells[row * width + domain_of[first]] += total
                    continue
                run_domain, run_change = -1, 0
                for j in range(count):
                    domain = domain_of[nodes[j]]
                    if domain != run_domain:
                        if run_change:
                            cells[row * width + run_domain] += run_change
                        run_domain, run_change = domain, 0
                    run_change += after[j] - before[j]
                if run_change:
                    cells[row * width + run_domain] += run_change
