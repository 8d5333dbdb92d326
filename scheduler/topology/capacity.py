"""Free capacity per node and per domain, kept incrementally.

``free`` is a (resources × nodes) integer array changed only where pods are reserved or
released. For each pod shape (per-pod requests + tolerations + node selector) the placer asks
"how many such pods fit", per node (``slots``) and per domain at every level (``caps``). Those
counts are cached per shape and patched on every reserve/release for just the nodes touched,
so a placement attempt never recounts 10,000 nodes. The cached shapes live as rows of shared
matrices, so one reserve or release patches every shape with a handful of numpy calls.

A node that is not Ready, is cordoned, carries a NoSchedule/NoExecute taint the pod set does not
tolerate, or does not match the pod set's node selector holds no capacity for that shape.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from runtimes.k8s.core import Taint, Toleration
from scheduler.topology.graph import IntArray, NodeInfo, TopologyIndex
from scheduler.topology.leaf_index import SlotBits
from scheduler.topology.node_cells import UNBOUNDED_SLOTS, NodeCells, RowTerms
from scheduler.topology.row_block import ActiveRows, carry_moves, consecutive
from scheduler.topology.shapes import PODS, EligibilityKey, PodShape, ShapeCounts, pod_shape

BoolArray = npt.NDArray[np.bool_]
_CACHED_SHAPES = 32
_UNBOUNDED = np.int64(UNBOUNDED_SLOTS)  # slots of a shape that asks for nothing: bounded only by eligibility
_NO_LIMIT = np.iinfo(np.int64).max  # a resource the shape does not ask for limits nothing
# Changes of up to this many distinct nodes in topology order (small gangs) are applied element by
# element: below it, numpy's fixed cost per call outweighs the per-node loop.
_RUN_NODES = 6
# State versions are drawn from one counter, so no two states (nor two moments of one) share one.
_VERSIONS = itertools.count(1)


def _tolerated(tolerations: Sequence[Toleration], taints: tuple[Taint, ...]) -> bool:
    return all(any(t.tolerates(taint) for t in tolerations) for taint in taints)


class CapacityState:
    """Allocatable, used and free amounts of every node of one flavor, plus per-shape counts."""

    def __init__(
        self,
        index: TopologyIndex,
        infos: Sequence[NodeInfo],
        flavor_tolerations: Sequence[Toleration] = (),
        used: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        self.index = index
        self.version = next(_VERSIONS)  # changes with every change of free capacity
        # changes whenever free capacity may grow (a release, a node changed): while it stays,
        # capacity has only shrunk, so a pod set that found no room still finds none
        self.grown = self.version
        self.nodes_changed = 0  # counts ``update_node`` calls: allocatable, labels or taints may differ
        self.flavor_tolerations = tuple(flavor_tolerations)
        self.resources = tuple(sorted({res for info in infos for res in info.allocatable}))
        self.resource_index = {res: i for i, res in enumerate(self.resources)}
        n = len(infos)
        self.alloc = np.zeros((len(self.resources), n), dtype=np.int64)
        taken = np.zeros_like(self.alloc)
        self.usable = np.zeros(n, dtype=np.bool_)
        self.labels: list[dict[str, str]] = []
        self.taint_sets: list[tuple[Taint, ...]] = []
        self._taint_class_of: dict[tuple[tuple[str, str | None, str], ...], int] = {}
        self.taint_class = np.zeros(n, dtype=np.int64)
        for i, info in enumerate(infos):
            self._set_node(i, info)
            for res, amount in (used or {}).get(info.name, {}).items():
                if res in self.resource_index:
                    taken[self.resource_index[res], i] = amount
        # only ``free`` is kept up to date (one numpy update per change); ``used`` is derived
        self.free = self.alloc - taken
        # eligibility key → (the tolerations it was built from, mask over nodes)
        self._masks: OrderedDict[EligibilityKey, tuple[tuple[Toleration, ...], BoolArray]] = OrderedDict()
        # cached shapes: shape -> row of the matrices below (least recently used first)
        self._counts: OrderedDict[PodShape, int] = OrderedDict()
        rows, resources = _CACHED_SHAPES, len(self.resources)
        self._slot_rows = np.zeros((rows, n), dtype=np.int64)
        self._cap_rows = [np.zeros((rows, len(starts)), dtype=np.int64) for starts in index.starts[:-1]]
        self._row_masks = np.zeros((rows, n), dtype=np.bool_)
        self._row_eligibility: list[tuple[EligibilityKey, tuple[Toleration, ...]] | None] = [None] * rows
        self._row_bits: list[SlotBits | None] = [None] * rows
        self._row_counts: list[ShapeCounts | None] = [None] * rows
        self._divisors = np.ones((rows, resources), dtype=np.int64)
        self._unrequested = np.ones((rows, resources), dtype=np.bool_)
        self._asks_nothing = np.zeros(rows, dtype=np.bool_)
        self._feasible = np.zeros(rows, dtype=np.bool_)
        self._spare_rows = list(range(rows - 1, -1, -1))
        self._active = np.zeros(0, dtype=np.int64)
        self._active_terms = self._gather_active()
        # per active row, for the one-node refresh: (row, requested (resource, amount) pairs or
        # None when the shape asks for nothing, feasible, its slot bitsets)
        self._row_terms: list[RowTerms] = []
        # the same memory, element by element, for the one-node path (and node_domain as lists)
        self._cells = NodeCells(self.free, self._slot_rows, self._cap_rows, index.node_domain_lists[:-1])

    def _set_node(self, i: int, info: NodeInfo) -> None:
        for res, amount in info.allocatable.items():
            if res in self.resource_index:
                self.alloc[self.resource_index[res], i] = amount
        self.usable[i] = info.usable
        key = tuple(sorted((t.key, t.value, t.effect) for t in info.taints))
        if key not in self._taint_class_of:
            self._taint_class_of[key] = len(self.taint_sets)
            self.taint_sets.append(info.taints)
        self.taint_class[i] = self._taint_class_of[key]
        if i < len(self.labels):
            self.labels[i] = info.labels
        else:
            self.labels.append(info.labels)

    # ------------------------------------------------------------------------------ shapes

    def shape(
        self,
        requests: Mapping[str, int],
        tolerations: Sequence[Toleration] = (),
        node_selector: Mapping[str, str] | None = None,
    ) -> PodShape:
        return pod_shape(self.resource_index, requests, tolerations, node_selector)

    def eligible(self, shape: PodShape, tolerations: Sequence[Toleration]) -> BoolArray:
        """Nodes where pods of the shape may run at all (Ready, uncordoned, taints, selector)."""
        entry = self._masks.get(shape.eligibility)
        if entry is None:
            nodes = np.arange(self.index.size, dtype=np.int64)
            entry = (tuple(tolerations), self._compute_mask(shape.eligibility, tolerations, nodes))
            self._masks[shape.eligibility] = entry
            if len(self._masks) > _CACHED_SHAPES:
                self._masks.popitem(last=False)
        return entry[1]

    def _compute_mask(self, key: EligibilityKey, tolerations: Sequence[Toleration], nodes: IntArray) -> BoolArray:
        allowed = [*tolerations, *self.flavor_tolerations]
        class_ok = np.array([_tolerated(allowed, taints) for taints in self.taint_sets], dtype=np.bool_)
        mask = self.usable[nodes] & class_ok[self.taint_class[nodes]]
        selector = key[1]
        if selector:
            matches = np.array(
                [all(self.labels[int(i)].get(k) == v for k, v in selector) for i in nodes], dtype=np.bool_
            )
            mask &= matches
        return mask

    def counts(self, shape: PodShape, tolerations: Sequence[Toleration] = ()) -> ShapeCounts:
        row = self._counts.get(shape)
        if row is None:
            row = self._add_row(shape, tolerations)
        else:
            self._counts.move_to_end(shape)
        counts = self._row_counts[row]
        assert counts is not None  # set with the row
        return counts

    def _add_row(self, shape: PodShape, tolerations: Sequence[Toleration]) -> int:
        if not self._spare_rows:
            _, evicted = self._counts.popitem(last=False)
            self._row_eligibility[evicted] = None
            self._spare_rows.append(evicted)
        row = self._spare_rows.pop()
        mask = self.eligible(shape, tolerations)
        slots = self._slots(shape, self.free, mask)
        self._slot_rows[row] = slots
        for caps, starts in zip(self._cap_rows, self.index.starts[:-1], strict=True):
            caps[row] = np.add.reduceat(slots, starts) if len(slots) else 0
        self._row_masks[row] = mask
        self._row_eligibility[row] = (shape.eligibility, tuple(tolerations))
        live = self._slot_rows[row]  # a view: the bitsets and the counts below follow every patch
        self._row_bits[row] = bits = SlotBits(live)
        self._row_counts[row] = ShapeCounts(live, [caps[row] for caps in self._cap_rows] + [live], bits)
        amounts = np.array(shape.amounts, dtype=np.int64).reshape(-1)
        self._divisors[row] = np.where(amounts > 0, amounts, 1)
        self._unrequested[row] = amounts <= 0
        self._asks_nothing[row] = not (amounts > 0).any()
        self._feasible[row] = shape.feasible
        self._counts[shape] = row
        self._active = np.array(sorted(self._counts.values()), dtype=np.int64)
        self._active_terms = self._gather_active()
        self._row_terms = [self._terms(r) for r in self._active.tolist()]
        return row

    def _gather_active(self) -> ActiveRows:
        rows = self._active
        return ActiveRows(rows, self._divisors, self._unrequested, self._asks_nothing, self._feasible, self._row_masks)

    def _terms(self, row: int) -> RowTerms:
        requested = [(r, int(d)) for r, d in enumerate(self._divisors[row].tolist()) if not self._unrequested[row, r]]
        bits = self._row_bits[row]
        assert bits is not None  # set with the row
        return row, requested or None, bool(self._feasible[row]), bits

    def _slots(self, shape: PodShape, free: IntArray, mask: BoolArray) -> IntArray:
        if not shape.feasible:
            return np.zeros(free.shape[1], dtype=np.int64)
        rows = [r for r, amount in enumerate(shape.amounts) if amount > 0]
        if not rows:
            # asks for nothing: bounded only by eligibility (any count fits)
            return np.where(mask, _UNBOUNDED, 0).astype(np.int64)
        amounts = np.array([shape.amounts[r] for r in rows], dtype=np.int64)[:, None]
        fit = (np.maximum(free[rows], 0) // amounts).min(axis=0)
        return np.where(mask, fit, 0).astype(np.int64)

    def slots_with(self, shape: PodShape, nodes: IntArray, extra_used: IntArray) -> IntArray:
        """Slots on ``nodes`` if ``extra_used`` (resources × len(nodes)) were also taken."""
        mask = self._masks[shape.eligibility][1][nodes]
        return self._slots(shape, self.free[:, nodes] - extra_used, mask)

    # --------------------------------------------------------------------- incremental updates

    @property
    def used(self) -> IntArray:
        """Used amounts (resources × nodes), derived from what is free."""
        return self.alloc - self.free

    def apply(
        self,
        nodes: IntArray,
        delta: IntArray,
        *,
        ascending: bool | None = None,
        frees: bool | None = None,
        report_overcommit: bool = False,
    ) -> bool:
        """``used[:, nodes] += delta``; patch every cached shape on just those nodes. With
        ``report_overcommit``, True when one of those nodes is left with a negative free amount.

        Callers that know it say whether ``nodes`` is strictly ascending (distinct, in topology
        order) and whether the change frees capacity; otherwise both are worked out here.
        """
        self.version = next(_VERSIONS)
        if frees is None:
            frees = bool(delta.size) and bool(np.minimum.reduce(delta, axis=None) < 0)
        if frees:
            self.grown = self.version
        if len(nodes) == 1:
            # most reservations and releases touch one node: element by element, no numpy call
            i = int(nodes[0])
            free, negative = self._cells.take(i, delta[:, 0].tolist())
            if len(self._active):
                self._refresh_one(i, free)
            return negative and report_overcommit
        if ascending is None:
            ascending = bool(np.logical_and.reduce(nodes[1:] > nodes[:-1]))
        if ascending and len(nodes) <= _RUN_NODES:
            return self._apply_run(nodes.tolist(), delta.T.tolist()) and report_overcommit
        if ascending:
            # distinct positions (placements list their nodes in topology order): no ufunc.at needed
            unique = nodes
            columns = consecutive(nodes)
            self.free[:, columns] -= delta
        else:
            np.subtract.at(self.free.T, nodes, delta.T)  # .T is a view: columns are nodes
            unique = np.unique(nodes)
            columns = consecutive(unique)
        negative = report_overcommit and bool(np.minimum.reduce(self.free[:, columns], axis=None) < 0)
        self._refresh(unique, columns)
        return negative

    def _apply_run(self, nodes: list[int], amounts: list[list[int]]) -> bool:
        """``apply`` of a few distinct nodes in topology order, element by element (no numpy
        call per step): whether one of them is left with a negative free amount."""
        cells = self._cells
        frees: list[list[int]] = []
        negative = False
        for j in range(len(nodes)):
            free, short = cells.take(nodes[j], amounts[j])
            frees.append(free)
            negative = negative or short
        if len(self._active):
            masks = None if self._active_terms.unmasked else self._row_masks[:, nodes].tolist()
            cells.refresh_run(nodes, frees, self._row_terms, masks)
        return negative

    def _refresh(self, nodes: IntArray, columns: slice | IntArray | None = None) -> None:
        """Recount every cached shape on ``nodes`` (distinct positions, ascending) and patch the
        domain sums. ``columns`` is ``consecutive(nodes)``, when the caller has worked it out."""
        rows = self._active
        if not len(rows) or not len(nodes):
            return
        if len(nodes) == 1:
            self._refresh_one(int(nodes[0]))
            return
        terms = self._active_terms
        if columns is None:
            columns = consecutive(nodes)
        free = np.maximum(self.free[:, columns], 0)  # resources × nodes
        fit = free[None, :, :] // terms.divisors  # shapes × resources × nodes
        if terms.all_requested:
            fit = np.minimum.reduce(fit, axis=1)
        else:
            fit = np.minimum.reduce(np.where(terms.unrequested, _NO_LIMIT, fit), axis=1, initial=_NO_LIMIT)
        if terms.any_asks_nothing:
            fit = np.where(terms.asks_nothing, _UNBOUNDED, fit)
        # shapes × nodes: slices where rows and nodes are consecutive, else by broadcasting
        # (np.ix_ costs more)
        shapes = terms.row_span if terms.row_span is not None else terms.rows_column
        block = (shapes, columns if terms.row_span is not None else nodes)
        fresh = fit if terms.unmasked else np.where(self._row_masks[block] & terms.feasible, fit, 0)
        old = self._slot_rows[block]
        if isinstance(block[1], slice):
            old = old.copy()  # a view of the rows written just below
        change = fresh - old
        self._slot_rows[block] = fresh
        carry_moves([self._row_bits[row] for row in rows.tolist()], nodes, old, fresh, change)
        per_shape: IntArray | None = None
        first, last = int(nodes[0]), int(nodes[-1])
        row_index = terms.row_span if terms.row_span is not None else rows
        for level, caps in enumerate(self._cap_rows):
            domain_of = self._cells.domain_of[level]
            if domain_of[first] == domain_of[last]:
                # nodes in topology order: all in one domain at this level (a gang in one block)
                if per_shape is None:
                    per_shape = np.add.reduce(change, axis=1)
                caps[row_index, domain_of[first]] += per_shape
            else:
                np.add.at(caps, (terms.rows_column, self.index.node_domain[level][nodes][None, :]), change)

    def _refresh_one(self, i: int, free: list[int] | None = None) -> None:
        """``_refresh`` of one node in plain Python: most reservations and releases touch one
        node, and for a handful of cached shapes numpy's per-call cost would dominate. Computes
        exactly what the vectorized path does. ``free`` is the node's free amounts, floored at 0,
        when the caller has them."""
        if free is None:
            free = [max(amount, 0) for amount in self.free[:, i].tolist()]
        # one read for every row (a read per row would cost a numpy call each); none when every
        # shape may run everywhere
        masks = None if self._active_terms.unmasked else self._row_masks[:, i].tolist()
        self._cells.refresh(i, free, self._row_terms, masks)

    def update_node(self, i: int, info: NodeInfo) -> None:
        """A node changed allocatable, readiness, taints or labels (same topology position)."""
        self.version = next(_VERSIONS)
        self.grown = self.version
        self.nodes_changed += 1
        for res in info.allocatable:
            if res not in self.resource_index:
                raise KeyError(res)  # a new resource: the caller rebuilds
        used = self.alloc[:, i] - self.free[:, i]
        self.alloc[:, i] = 0
        self._set_node(i, info)
        self.free[:, i] = self.alloc[:, i] - used
        nodes = np.array([i], dtype=np.int64)
        for key, (tolerations, mask) in self._masks.items():
            mask[nodes] = self._compute_mask(key, tolerations, nodes)
        for row in self._active.tolist():
            eligibility = self._row_eligibility[row]
            assert eligibility is not None
            self._row_masks[row, i] = self._compute_mask(eligibility[0], eligibility[1], nodes)[0]
        self._active_terms = self._gather_active()  # a mask may have changed
        self._refresh(nodes)

    def free_at(self, i: int) -> tuple[int, ...]:
        """Node ``i``'s free amounts as plain ints (one element read each, no array made)."""
        return self._cells.free_at(i)

    def used_by_name(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        used = self.used
        cols = np.flatnonzero(used.any(axis=0))
        for i in cols:
            out[self.index.names[int(i)]] = {res: int(used[r, i]) for r, res in enumerate(self.resources) if used[r, i]}
        return out

    def amounts_vector(self, requests: Mapping[str, int]) -> IntArray:
        """One pod of ``requests``, one row per resource (``pods`` counts 1 unless asked)."""
        return np.array(self.amounts_list(requests), dtype=np.int64)

    def amounts_list(self, requests: Mapping[str, int]) -> list[int]:
        """``amounts_vector`` as plain ints, without an array (the placer's per-choice path)."""
        amounts = [0] * len(self.resources)
        for res, amount in requests.items():
            row = self.resource_index.get(res)
            if row is not None:
                amounts[row] = amount
        pods_row = self.resource_index.get(PODS)
        if pods_row is not None and not requests.get(PODS):
            amounts[pods_row] = 1
        return amounts

    def pods_usage(self, requests: Mapping[str, int], pods: int) -> IntArray:
        """resources × pods: what ``pods`` pods of one shape use, one column per pod."""
        return np.repeat(self.amounts_vector(requests)[:, None], pods, axis=1)
