"""The pod shapes a placer was asked to place lately: what fragmentation is measured against.

FGD measures fragmentation against the workload's distribution of pod shapes; a scheduler does
not know the future workload, so it reads it from the recent past: every pod set the placer is
asked for, placed or still waiting, puts its shape at the front of a list of the last
``HISTORY_SHAPES`` distinct shapes. Each shape there counts the same, however many pods asked for
it: a rare shape that needs a whole large node (an 8-GPU pod with most of a node's memory) weighs
as much as the popular one-GPU pod, which is what keeps the few nodes able to take it whole while
other nodes can take the small pods. (Weighting shapes by their pods, as the paper does with a
known workload, lets the popular shapes break those nodes first: on the openb trace that refuses
an 8-GPU pod with 4 % of the GPUs still free.)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from runtimes.k8s.core import Toleration
from scheduler.topology.capacity import BoolArray, CapacityState
from scheduler.topology.fragmentation import WHOLE, ShapeMix
from scheduler.topology.graph import IntArray
from scheduler.topology.shapes import PodShape
from scheduler.topology.whole_growth import WholeGpuTable

HISTORY_SHAPES = 128


class ShapeHistory:
    """The last distinct pod shapes of one capacity state's resources, most recent last."""

    def __init__(self, limit: int = HISTORY_SHAPES) -> None:
        self.limit = limit
        self._tolerations: OrderedDict[PodShape, tuple[Toleration, ...]] = OrderedDict()
        # the shapes as arrays, rebuilt when one is added or forgotten: their order, each one's
        # position, amounts, and pods asked for (counted in place while it is remembered)
        self._shapes: list[PodShape] = []
        self._position: dict[PodShape, int] = {}
        self._amounts = np.zeros((0, 0), dtype=np.int64)
        self._pods = np.zeros(0, dtype=np.float64)
        self._mix: tuple[int, ShapeMix] | None = None  # (GPU row, the mix)
        # (the state, its nodes_changed then, shapes × all its nodes: where each may run)
        self._eligible: tuple[CapacityState, int, BoolArray] | None = None
        # (the state, its nodes_changed then, GPU row, the GPU shapes as ints for the hot path)
        self._table: tuple[CapacityState, int, int, WholeGpuTable] | None = None

    def __len__(self) -> int:
        return len(self._tolerations)

    def record(self, shape: PodShape, tolerations: Sequence[Toleration], pods: int) -> None:
        """A pod set of ``pods`` pods of ``shape`` was asked for."""
        if not shape.feasible:
            return
        known = self._tolerations
        if shape in known:
            known.move_to_end(shape)
        else:
            if len(known) >= self.limit:
                known.popitem(last=False)
            known[shape] = tuple(tolerations)
            self._rebuild()
        self._pods[self._position[shape]] += pods

    def _rebuild(self) -> None:
        old = dict(zip(self._shapes, self._pods.tolist(), strict=True))
        self._shapes = list(self._tolerations)
        self._position = {shape: i for i, shape in enumerate(self._shapes)}
        width = len(self._shapes[0].amounts)
        self._amounts = np.array([shape.amounts for shape in self._shapes], dtype=np.int64).reshape(-1, width)
        self._pods = np.array([old.get(shape, 0.0) for shape in self._shapes], dtype=np.float64).reshape(-1)
        self._mix = None
        self._eligible = None
        self._table = None

    def mix(self, gpu_row: int) -> ShapeMix:
        """The recorded shapes as a mix of whole-GPU shapes (each weighing the same; ``by_pods``
        for the paper's weights, read from the live counts)."""
        known = self._mix
        if known is None or known[0] != gpu_row:
            count = len(self._shapes)
            gpus: IntArray = self._amounts[:, gpu_row] if count else np.zeros(0, dtype=np.int64)
            known = (gpu_row, ShapeMix(self._amounts, np.full(count, WHOLE, dtype=np.int64), gpus, self._pods))
            self._mix = known
        return known[1]

    def eligible(self, state: CapacityState, nodes: IntArray) -> BoolArray:
        """Shapes × ``nodes``: where each recorded shape may run, in the mix's order."""
        rows: BoolArray = self._all_eligible(state)[:, nodes]
        return rows

    def _all_eligible(self, state: CapacityState) -> BoolArray:
        known = self._eligible
        if known is None or known[0] is not state or known[1] != state.nodes_changed:
            known = (state, state.nodes_changed, self._masks(state))
            self._eligible = known
        return known[2]

    def whole_table(self, state: CapacityState, gpu_row: int) -> WholeGpuTable:
        """The recorded shapes that ask for a GPU, as ints, with where each may run on ``state``."""
        known = self._table
        if known is None or known[0] is not state or known[1] != state.nodes_changed or known[2] != gpu_row:
            asks = self._amounts[:, gpu_row] > 0 if len(self._shapes) else np.zeros(0, dtype=np.bool_)
            masks = self._all_eligible(state)[asks]
            packed = np.packbits(masks, axis=0).T if len(masks) else np.zeros((state.index.size, 0), dtype=np.uint8)
            kinds, node_kind = np.unique(packed, axis=0, return_inverse=True)
            kind_eligible = np.unpackbits(kinds, axis=1, count=len(masks)).astype(bool) if len(kinds) else kinds
            table = WholeGpuTable(self._amounts[asks].tolist(), node_kind.reshape(-1).tolist(), kind_eligible.tolist())
            known = (state, state.nodes_changed, gpu_row, table)
            self._table = known
        return known[3]

    def _masks(self, state: CapacityState) -> BoolArray:
        by_key: dict[object, BoolArray] = {}
        rows: list[BoolArray] = []
        for shape in self._shapes:
            mask = by_key.get(shape.eligibility)
            if mask is None:
                mask = state.eligible(shape, self._tolerations[shape]).copy()
                by_key[shape.eligibility] = mask
            rows.append(mask)
        if not rows:
            return np.zeros((0, state.index.size), dtype=np.bool_)
        return np.stack(rows)
