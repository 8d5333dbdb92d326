"""Which node takes a pod set that fits on one node: the one that leaves the cluster least fragmented.

Every node holding the pod set is at the lowest tier with one domain (t* is the node level and
m* is 1), so the choice among them is free. It goes to the node whose expected GPU fragmentation
grows least (``scheduler.topology.fragmentation``), measured against the distinct shapes the
placer was asked for lately, pending heads and recent placements alike, each weighing the same
(``ShapeHistory``); ties go to the tightest node (fewest pods of the shape left), then to
topology order, as before. In a flavor of at most ``EVERY_NODE_UP_TO`` nodes every node that
holds the pod set is compared; in a larger one, per count of pods the shape fits there, the first
few nodes of each node class (same allocatable amounts) among the first nodes in topology order.
The measure is counted in ints on the hot path (``whole_growth``): a choice costs tens of
microseconds of compiled code, not a few dozen array calls.

``choose_least_fragmenting`` is the same choice over any ``PlacementView``: the simulator's
GPU-sharing replay asks it where a GPU share goes, GPU by GPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from runtimes.k8s.core import Toleration
from scheduler.topology.capacity import CapacityState
from scheduler.topology.distribution import Picked
from scheduler.topology.fragmentation import (
    WHOLE,
    FloatArray,
    accelerator_row,
    expected_fragmentation,
    least_growth,
)
from scheduler.topology.graph import IntArray, TopologyIndex
from scheduler.topology.policy import Chosen, PlacementView
from scheduler.topology.shape_history import ShapeHistory
from scheduler.topology.shapes import PodShape, ShapeCounts
from scheduler.topology.whole_growth import WholeGpuTable

# nodes compared: every node that holds the pod set in a flavor of at most EVERY_NODE_UP_TO
# nodes; in a larger one, per count of pods the shape fits there, the first PER_CLASS of each node
# class among the first SCAN nodes in topology order
EVERY_NODE_UP_TO = 2048
PER_CLASS = 4
SCAN = 32


def node_classes(state: CapacityState) -> list[int]:
    """Per node, a number shared by the nodes with the same allocatable amounts."""
    _, inverse = np.unique(state.alloc.T, axis=0, return_inverse=True)
    classes: list[int] = inverse.reshape(-1).tolist()
    return classes


class LeastFragmenting:
    """Chooses nodes for one-node pod sets, remembering the shapes asked for."""

    def __init__(self, every_node_up_to: int = EVERY_NODE_UP_TO, per_class: int = PER_CLASS, scan: int = SCAN) -> None:
        self.every_node_up_to = every_node_up_to
        self.per_class = per_class
        self.scan = scan
        self.history = ShapeHistory()
        # (the state, its nodes_changed then, its node classes, how many there are)
        self._classes: tuple[CapacityState, int, list[int], int] | None = None

    def record(self, shape: PodShape, tolerations: Sequence[Toleration], pods: int) -> None:
        """A pod set of ``pods`` pods of ``shape`` was asked for (placed or not)."""
        self.history.record(shape, tolerations, pods)

    def choose(self, state: CapacityState, counts: ShapeCounts, requests: Mapping[str, int], need: int) -> int:
        """The node of ``state`` for ``need`` pods of ``requests`` (``counts``: their shape's
        counts); -1 when no node holds them."""
        leaf = counts.leaf
        tightest = leaf.tightest(need)
        gpu_row = accelerator_row(state.resources, requests)
        if tightest < 0 or gpu_row is None or not len(self.history):
            return tightest
        classes, class_count = self.classes(state)
        if state.index.size <= self.every_node_up_to:
            nodes, held = leaf.candidates(need, classes, 0, state.index.size, class_count)
        else:
            nodes, held = leaf.candidates(need, classes, self.per_class, self.scan, class_count)
        if len(nodes) <= 1:
            return tightest
        table = self.history.whole_table(state, gpu_row)
        taken = [amount * need for amount in state.amounts_list(requests)]
        return _least_growth_node(table, state, nodes, held, taken, gpu_row)

    def refine_partial(
        self,
        state: CapacityState,
        counts: ShapeCounts,
        picked: Picked,
        requests: Mapping[str, int],
        index: TopologyIndex,
    ) -> None:
        """A gang's nodes it leaves partly free (the last, tightest pick in a domain) move to the
        node of the same domain, not otherwise taken, where the gang's pods grow fragmentation
        least; ties keep the tightest. The nodes per domain at every level stay as they were, so
        the placement keeps its tier and its fewest domains."""
        gpu_row = accelerator_row(state.resources, requests)
        if gpu_row is None or not len(self.history) or index.depth < 2:
            return
        slots = counts.slots
        level = index.depth - 2  # the domains directly above the nodes
        taken_nodes = {node for node, _ in picked.pairs}
        per_pod = state.amounts_list(requests)
        for k, (node, pods) in enumerate(picked.pairs):
            if pods >= int(slots[node]):
                continue  # fills its node
            domain = int(index.node_domain[level][node])
            start, end = int(index.starts[level][domain]), int(index.ends[level][domain])
            room = (start + np.flatnonzero(slots[start:end] >= pods)).tolist()
            nodes = [i for i in room if i == node or i not in taken_nodes]
            if len(nodes) <= 1:
                continue
            table = self.history.whole_table(state, gpu_row)
            held = [int(slots[i]) for i in nodes]
            best = _least_growth_node(table, state, nodes, held, [a * pods for a in per_pod], gpu_row)
            if best != node:
                picked.pairs[k] = (best, pods)
                taken_nodes.discard(node)
                taken_nodes.add(best)

    def classes(self, state: CapacityState) -> tuple[list[int], int]:
        """Per node its class (same allocatable amounts), and how many classes there are."""
        known = self._classes
        if known is None or known[0] is not state or known[1] != state.nodes_changed:
            classes = node_classes(state)
            known = (state, state.nodes_changed, classes, len(set(classes)))
            self._classes = known
        return known[2], known[3]


def _least_growth_node(
    table: WholeGpuTable, state: CapacityState, nodes: list[int], held: list[int], taken: list[int], gpu_row: int
) -> int:
    """Among ``nodes`` (each holding ``held`` pods of the shape), the one whose fragmentation grows
    least when ``taken`` leaves it; ties to the fewest held, then the first in topology order."""
    # growth reads a node only through its kind and free amounts: nodes alike (empty ones of a
    # class, mostly) are counted once, and the table keeps the counts for later choices
    by_kind = table.known_growths(tuple(taken), gpu_row)
    node_kind = table.node_kind
    best = nodes[0]
    best_growth = 0
    best_held = held[0]
    for k in range(len(nodes)):
        node = nodes[k]
        free = state.free_at(node)
        known = by_kind[node_kind[node]]
        growth = known.get(free)
        if growth is None:
            growth = table.growth(node, free, taken, gpu_row)
            table.remember(known, free, growth)
        if k == 0:
            best_growth = growth
        elif growth < best_growth or (
            growth == best_growth and (held[k] < best_held or (held[k] == best_held and node < best))
        ):
            best, best_growth, best_held = node, growth, held[k]
    return best


def device_options(devices: IntArray, nodes: IntArray, share: int, gpus: int) -> tuple[IntArray, IntArray, IntArray]:
    """Where one pod can go on ``nodes`` when GPUs are shared: per node, each GPU with a distinct
    free share that holds ``share`` (one option per node for whole GPUs, which take fully free
    ones, and for pods without GPUs). Returns the options' nodes, their GPUs' free shares after
    the pod (options × GPUs) and the GPU the share went to (-1: none or whole GPUs)."""
    option_nodes: list[int] = []
    used: list[int] = []
    rows: list[IntArray] = []
    for node in nodes.tolist():
        row = devices[node]
        if gpus and share < WHOLE:
            seen: set[int] = set()
            for device in np.flatnonzero(row >= share).tolist():
                free = int(row[device])
                if free in seen:
                    continue  # another GPU as free: the same outcome
                seen.add(free)
                after = row.copy()
                after[device] -= share
                option_nodes.append(node)
                used.append(device)
                rows.append(after)
            continue
        after = row.copy()
        if gpus:
            after[np.flatnonzero(row == WHOLE)[:gpus]] = 0
        option_nodes.append(node)
        used.append(-1)
        rows.append(after)
    width = devices.shape[1]
    stacked = np.stack(rows) if rows else np.zeros((0, width), dtype=np.int64)
    return np.array(option_nodes, dtype=np.int64), stacked, np.array(used, dtype=np.int64)


def option_growth(view: PlacementView, nodes: IntArray, devices_after: IntArray | None) -> FloatArray:
    """How much each option (one pod on ``nodes[k]``, leaving its GPUs as ``devices_after[k]``
    where shared) grows its node's expected fragmentation against the view's mix."""
    mix, gpu_row = view.mix, view.gpu_row
    if mix is None or gpu_row is None or not len(mix):
        return np.zeros(len(nodes), dtype=np.float64)
    eligible = view.mix_eligible(nodes)
    before = view.free[:, nodes]
    after = before - view.per_pod[:, None]
    devices_before = None if view.devices is None else view.devices[nodes]
    return expected_fragmentation(mix, after, eligible, gpu_row, devices_after) - expected_fragmentation(
        mix, before, eligible, gpu_row, devices_before
    )


def choose_least_fragmenting(view: PlacementView) -> Chosen | None:
    """trainyard's choice for a one-pod pod set over any view (the GPU-sharing replay's too):
    the node, and the GPU where shared, whose fragmentation grows least; ties to the tightest
    node, then topology order. Every node that holds the pod is compared."""
    nodes = np.flatnonzero(view.slots > 0)
    if not len(nodes) or view.pods != 1:
        return None
    if view.devices is None:
        growth = option_growth(view, nodes, None)
        return Chosen(nodes[[least_growth(growth, view.slots[nodes], nodes)]])
    option_nodes, after, used = device_options(view.devices, nodes, view.share, view.gpus_per_pod)
    growth = option_growth(view, option_nodes, after)
    best = least_growth(growth, view.slots[option_nodes], option_nodes)
    device = int(used[best])
    return Chosen(option_nodes[[best]], None if device < 0 else [device])
