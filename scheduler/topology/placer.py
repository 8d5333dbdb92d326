"""All-or-nothing gang placement on one TAS ResourceFlavor's topology.

For each pod set: find the lowest tier t* at which one domain can hold the whole pod set
(bounded above by a required level; a preferred level or none falls back upward to the whole
flavor); among the domains of t* that fit, take the one whose pods span the fewest child domains,
then the tightest; descend level by level spanning the fewest, tightest children; ranks walk the
chosen nodes in topology order. Unconstrained pod sets pack best-fit onto the fullest nodes.

``place`` is pure: later pod sets of a gang see the earlier ones' pods through a tentative
reservation that is undone before returning. ``reserve``/``release`` change the state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from runtimes.k8s.core import Node
from scheduler.api.kueue import ResourceFlavor, Topology
from scheduler.topology.capacity import CapacityState, PodShape, ShapeCounts
from scheduler.topology.failures import replace_failed_node
from scheduler.topology.graph import (
    IntArray,
    NodeInfo,
    TopologyGraph,
    TopologyIndex,
    build_topology_graph,
    flavor_selects,
    missing_level,
)
from scheduler.topology.metrics import FreeCapacity, free_capacity
from scheduler.topology.model import (
    GangPlacement,
    GangRequest,
    PlacementFailure,
    PodSetPlacement,
    PodSetRequest,
)
from scheduler.topology.search import fewest_children, fewest_tightest, tightest_domain

_NO_LEADER = np.int64(1) << 50
_SHAPES_KEPT = 1024


def short(label: str | None) -> str:
    """``network.topology.nvidia.com/block`` → ``block``."""
    return "flavor" if label is None else label.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class _Levels:
    """A pod set's levels as internal indices (0 = the whole flavor)."""

    top: int  # the highest level the single holding domain may be at
    required: bool
    slice_level: int | None
    slice_size: int


@dataclass
class _Found:
    """One pod set's nodes (positions in topology order, one per pod) before naming."""

    request: PodSetRequest
    nodes: IntArray


class TopologyPlacer:
    """Placement state of one TAS ResourceFlavor: its topology and the free capacity on it."""

    def __init__(self, topology: Topology, flavor: ResourceFlavor, graph: TopologyGraph) -> None:
        self.topology = topology
        self.flavor = flavor
        self._nodes: dict[str, Node] = {}
        self._gone: set[str] = set()
        self._install(graph, used=None)

    @classmethod
    def build(cls, topology: Topology, flavor: ResourceFlavor, nodes: Iterable[Node]) -> TopologyPlacer:
        node_list = list(nodes)
        placer = cls(topology, flavor, build_topology_graph(topology, flavor, node_list))
        placer._nodes = {n.name: n for n in node_list}
        return placer

    def _install(self, graph: TopologyGraph, used: Mapping[str, Mapping[str, int]] | None) -> None:
        self.graph = graph
        self.index = TopologyIndex(graph)
        self._infos = list(graph.nodes)
        self.state = CapacityState(self.index, self._infos, self.flavor.spec.tolerations, used)
        self._empty: CapacityState | None = None
        # id(request) -> (request, the state it was read for, its shape); the entry keeps both alive
        self._shapes: dict[int, tuple[PodSetRequest, CapacityState, PodShape]] = {}
        self._first_at: dict[tuple[int, int], IntArray] = {}
        # id(reserved placement) -> (placement, node positions, usage): positions of this index
        self._usage_cache: dict[int, tuple[GangPlacement, IntArray, IntArray]] = {}
        # where the Topology's own levels sit among the effective levels (the clique is extra)
        self._topology_positions = tuple(
            i for i, label in enumerate(self.index.levels) if label in graph.topology_levels
        )

    @property
    def version(self) -> int:
        """Changes whenever free capacity does: an answer of ``place`` holds while it stays."""
        return self.state.version

    @property
    def levels(self) -> tuple[str, ...]:
        """The levels a pod set may name: the Topology's, plus the NVLink clique level if present."""
        return self.index.levels

    # ------------------------------------------------------------------------------ place

    def place(self, request: GangRequest, *, simulate_empty: bool = False) -> GangPlacement | PlacementFailure:
        """A node for every pod of every pod set, or why not. Reserves nothing."""
        state = self._empty_state() if simulate_empty else self.state
        version = state.version
        found: dict[str, _Found] = {}
        applied: list[tuple[IntArray, IntArray]] = []
        units = _placement_units(request)
        try:
            for k, unit in enumerate(units):
                result = (
                    self._place_group(state, unit[0], unit[1])
                    if len(unit) == 2
                    else self._place_pod_set(state, unit[0])
                )
                if isinstance(result, PlacementFailure):
                    return result
                for item in result:
                    found[item.request.name] = item
                    if k < len(units) - 1:  # later pod sets must see these pods
                        delta = self._usage(state, item.request, item.nodes)
                        state.apply(item.nodes, delta)
                        applied.append((item.nodes, delta))
        finally:
            for nodes, delta in reversed(applied):
                state.apply(nodes, -delta)
            state.version = version  # the tentative pods are gone again: the same state as before
        return GangPlacement(self.flavor.name, tuple(self._describe(found[p.name]) for p in request.pod_sets))

    def _empty_state(self) -> CapacityState:
        if self._empty is None:
            self._empty = CapacityState(self.index, self._infos, self.flavor.spec.tolerations)
        return self._empty

    @staticmethod
    def _usage(state: CapacityState, request: PodSetRequest, nodes: IntArray) -> IntArray:
        vector = state.amounts_vector(request.requests)
        return np.repeat(vector[:, None], len(nodes), axis=1)

    def _resolve(self, ps: PodSetRequest) -> _Levels | PlacementFailure:
        accepted = ", ".join(self.index.levels)

        def index_of(label: str, what: str) -> int | PlacementFailure:
            found = self.index.level_index(label)
            if found is None:
                return PlacementFailure(
                    f"pod set {ps.name!r}: {what} level {label!r} is not a level of Topology "
                    f"{self.topology.name!r} (flavor {self.flavor.name!r}); use one of: {accepted}",
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
        return _Levels(top, required, slice_level, size if slice_level is not None else 1)

    def _shape(self, state: CapacityState, ps: PodSetRequest) -> tuple[PodShape, ShapeCounts]:
        # the engine hands the same request objects again and again: their shape is kept
        known = self._shapes.get(id(ps))
        if known is not None and known[0] is ps and known[1] is state:
            shape = known[2]
        else:
            shape = state.shape(ps.requests, ps.tolerations, ps.node_selector)
            if len(self._shapes) >= _SHAPES_KEPT:
                self._shapes.clear()
            self._shapes[id(ps)] = (ps, state, shape)
        return shape, state.counts(shape, ps.tolerations)

    def _unit_caps(self, counts: ShapeCounts, level: int, levels: _Levels) -> IntArray:
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

    def _place_pod_set(self, state: CapacityState, ps: PodSetRequest) -> list[_Found] | PlacementFailure:
        levels = self._resolve(ps)
        if isinstance(levels, PlacementFailure):
            return levels
        if ps.count <= 0:
            return [_Found(ps, np.zeros(0, dtype=np.int64))]
        shape, counts = self._shape(state, ps)
        if not shape.feasible:
            missing = sorted(r for r, a in ps.requests.items() if a > 0 and r not in state.resource_index)
            return PlacementFailure(
                f"pod set {ps.name!r} asks for {', '.join(missing)}, which no node of flavor "
                f"{self.flavor.name!r} offers",
                ps.name,
            )
        if ps.unconstrained and levels.slice_level is None:
            return self._pack_best_fit(counts, ps)
        last = self.index.depth - 1
        for level in range(last, levels.top - 1, -1):
            caps = self._unit_caps(counts, level, levels)
            need = ps.count // self._unit(level, levels)
            if len(caps) and int(caps.max()) >= need:
                break
        else:
            return self._no_room(ps, levels, counts)
        domain = self._choose_domain(counts, level, caps, need, levels)
        picked: list[tuple[int, int]] = []
        self._distribute(counts, level, domain, need, levels, picked)
        return [_Found(ps, _expand(picked))]

    def _choose_domain(self, counts: ShapeCounts, level: int, caps: IntArray, need: int, levels: _Levels) -> int:
        candidates = np.flatnonzero(caps >= need)
        if level == self.index.depth - 1 or len(candidates) == 1:
            return tightest_domain(caps, candidates, None)
        child = level + 1
        child_need = need * self._unit(level, levels) // self._unit(child, levels)
        spans = fewest_children(
            self._unit_caps(counts, child, levels),
            self.index.child_lo[level][candidates],
            self.index.child_hi[level][candidates],
            child_need,
        )
        full_spans = np.full(len(caps), np.iinfo(np.int64).max, dtype=np.int64)
        full_spans[candidates] = spans
        return tightest_domain(caps, candidates, full_spans)

    @staticmethod
    def _unit(level: int, levels: _Levels) -> int:
        """Pods per unit at ``level``: a slice at or above the slice level, else one pod."""
        if levels.slice_level is not None and level <= levels.slice_level:
            return levels.slice_size
        return 1

    def _distribute(
        self,
        counts: ShapeCounts,
        level: int,
        domain: int,
        need: int,
        levels: _Levels,
        out: list[tuple[int, int]],
    ) -> None:
        """Spread ``need`` units of ``domain`` over its fewest, tightest children, down to nodes."""
        last = self.index.depth - 1
        if level == last:
            out.append((domain, need * self._unit(level, levels)))
            return
        child = level + 1
        lo = int(self.index.child_lo[level][domain])
        hi = int(self.index.child_hi[level][domain])
        child_need = need * self._unit(level, levels) // self._unit(child, levels)
        caps = self._unit_caps(counts, child, levels)[lo:hi].tolist()
        picks = fewest_tightest(caps, child_need)
        if child == last:
            unit = self._unit(child, levels)
            out.extend((lo + offset, amount * unit) for offset, amount in picks)
            return
        for offset, amount in picks:
            self._distribute(counts, child, lo + offset, amount, levels, out)

    def _pack_best_fit(self, counts: ShapeCounts, ps: PodSetRequest) -> list[_Found] | PlacementFailure:
        """Unconstrained: the tightest single node if one holds all, else fullest nodes first."""
        slots = counts.slots
        total = int(slots.sum())
        if total < ps.count:
            return PlacementFailure(
                f"pod set {ps.name!r} needs {ps.count} pods × {ps.describe_pod()}; "
                f"flavor {self.flavor.name!r} has room for {total}",
                ps.name,
            )
        fits = np.flatnonzero(slots >= ps.count)
        if len(fits):
            node = tightest_domain(slots, fits, None)
            return [_Found(ps, np.full(ps.count, node, dtype=np.int64))]
        candidates = np.flatnonzero(slots > 0)
        order = candidates[np.argsort(slots[candidates], kind="stable")]
        running = np.cumsum(slots[order])
        used = int(np.searchsorted(running, ps.count)) + 1
        chosen = order[:used]
        amounts = slots[chosen].copy()
        amounts[-1] -= int(running[used - 1]) - ps.count
        picked = sorted(zip(chosen.tolist(), amounts.tolist(), strict=True))
        return [_Found(ps, _expand(picked))]

    def _no_room(self, ps: PodSetRequest, levels: _Levels, counts: ShapeCounts) -> PlacementFailure:
        what = f"{ps.count} pods × {ps.describe_pod()}"
        if levels.slice_level is not None:
            slice_label = self.index.level_names[levels.slice_level]
            what = (
                f"{ps.count // levels.slice_size} slices of {levels.slice_size} pods × "
                f"{ps.describe_pod()}, each slice in one {slice_label}"
            )
        caps = self._unit_caps(counts, levels.top, levels)
        room = int(caps.max()) if len(caps) else 0
        unit = "slices" if levels.slice_level is not None else "pods"
        if levels.required:
            label = self.index.level_names[levels.top]
            return PlacementFailure(
                f"pod set {ps.name!r} needs {what} in one {label}; the largest {short(label)} "
                f"has room for {room} {unit}",
                ps.name,
            )
        return PlacementFailure(
            f"pod set {ps.name!r} needs {what}; flavor {self.flavor.name!r} has room for {room} {unit}",
            ps.name,
        )

    # ------------------------------------------------------------------- leader with workers

    def _place_group(
        self, state: CapacityState, leader: PodSetRequest, workers: PodSetRequest
    ) -> list[_Found] | PlacementFailure:
        """The leader's node and the workers' nodes inside one domain of the lowest tier."""
        levels = self._resolve(workers)
        if isinstance(levels, PlacementFailure):
            return levels
        leader_shape, leader_counts = self._shape(state, leader)
        worker_shape, worker_counts = self._shape(state, workers)
        if not (leader_shape.feasible and worker_shape.feasible):
            return PlacementFailure(
                f"pod sets {leader.name!r} and {workers.name!r} ask for a resource no node of flavor "
                f"{self.flavor.name!r} offers",
                workers.name,
            )
        nodes = np.arange(self.index.size, dtype=np.int64)
        leader_use = self._usage(state, leader, nodes)
        after = state.slots_with(worker_shape, nodes, leader_use)
        penalty = np.where(leader_counts.slots >= 1, worker_counts.slots - after, _NO_LEADER)
        need = workers.count
        last = self.index.depth - 1
        for level in range(last, levels.top - 1, -1):
            worst = np.minimum.reduceat(penalty, self.index.starts[level]) if len(penalty) else penalty
            caps = np.where(worst < _NO_LEADER, worker_counts.caps[level] - worst, -1)
            if len(caps) and int(caps.max()) >= need:
                break
        else:
            room = int(caps.max()) if len(caps) else 0
            where = (
                f"in one {self.index.level_names[levels.top]}" if levels.required else f"in flavor {self.flavor.name!r}"
            )
            return PlacementFailure(
                f"pod sets {leader.name!r} (leader, {leader.describe_pod()}) and {workers.name!r} "
                f"({need} pods × {workers.describe_pod()}) must be placed together {where}; "
                f"the best domain has room for the leader and {max(room, 0)} workers",
                workers.name,
            )
        domain = tightest_domain(caps, np.flatnonzero(caps >= need), None)
        start, end = int(self.index.starts[level][domain]), int(self.index.ends[level][domain])
        local = np.arange(start, end, dtype=np.int64)
        order = np.lexsort((local, -worker_counts.slots[start:end], penalty[start:end]))
        leader_node = int(local[order[0]])
        at = np.array([leader_node], dtype=np.int64)
        delta = leader_use[:, :1]
        state.apply(at, delta)
        try:
            picked: list[tuple[int, int]] = []
            self._distribute(worker_counts, level, domain, need, levels, picked)
        finally:
            state.apply(at, -delta)
        return [_Found(leader, at), _Found(workers, _expand(picked))]

    # ------------------------------------------------------------------------- describing

    def describe_nodes(self, request: PodSetRequest, positions: IntArray) -> PodSetPlacement:
        """The placement of ``request`` on the nodes at ``positions`` (one per rank)."""
        return self._describe(_Found(request, positions))

    def _describe(self, found: _Found) -> PodSetPlacement:
        nodes = found.nodes
        level, domain, spanned = self.lowest_common_domain(nodes)
        names = self.index.names
        node_names = tuple([names[i] for i in nodes.tolist()])
        return PodSetPlacement(
            name=found.request.name,
            request=found.request,
            level=self.index.level_names[level],
            domain=self.index.values[level][domain] if len(nodes) else (),
            nodes=node_names,
            spanned=spanned,
            topology_levels=self.graph.topology_levels,
            node_values=self.index.node_values,
            value_positions=self._topology_positions,
        )

    def lowest_common_domain(self, nodes: IntArray) -> tuple[int, int, int]:
        """(level, domain, children spanned) of the lowest domain holding all ``nodes``."""
        if len(nodes) == 0:
            return 0, 0, 0
        last = self.index.depth - 1
        for level in range(last, -1, -1):
            ids = self.index.node_domain[level][nodes]
            if ids.min() == ids.max():
                if level == last:
                    return level, int(ids[0]), 1
                below = self.index.node_domain[level + 1][nodes]
                return level, int(ids[0]), len(np.unique(below))
        return 0, 0, 0  # unreachable: level 0 has one domain

    # ------------------------------------------------------------------ failures, metrics

    def replace_failed_node(self, placement: GangPlacement, failed_node: str) -> GangPlacement | PlacementFailure:
        """Move only ``failed_node``'s pods (see ``scheduler.topology.failures``)."""
        return replace_failed_node(self, placement, failed_node)

    def free_capacity(self, resource: str = "nvidia.com/gpu") -> FreeCapacity:
        """Free ``resource`` per domain and how fragmented it is, for metrics."""
        return free_capacity(self.state, resource)

    # -------------------------------------------------------------------- reserve / release

    def _placement_usage(self, placement: GangPlacement, *, strict: bool) -> tuple[IntArray, IntArray]:
        """(node positions, resources × pods) of a placement's pods; reserved ones are cached."""
        cached = self._usage_cache.get(id(placement))
        if cached is not None and cached[0] is placement:
            return cached[1], cached[2]
        positions: list[int] = []
        blocks: list[IntArray] = []
        for ps in placement.pod_sets:
            vector = self.state.amounts_vector(ps.requests)
            found = [self.index.position.get(name) for name in ps.nodes]
            if strict and None in found:
                name = ps.nodes[found.index(None)]
                raise ValueError(
                    f"placement on flavor {placement.flavor!r} names node {name}, which is not "
                    "in the flavor any more; place the gang again"
                )
            kept = [f for f in found if f is not None]  # a node that left the flavor gives nothing back
            positions.extend(kept)
            blocks.append(np.repeat(vector[:, None], len(kept), axis=1))
        if not positions:
            return np.zeros(0, dtype=np.int64), np.zeros((len(self.state.resources), 0), dtype=np.int64)
        return np.array(positions, dtype=np.int64), np.concatenate(blocks, axis=1)

    def reserve(self, placement: GangPlacement) -> None:
        """Take the placement's pods from the free capacity (ValueError if that overcommits)."""
        nodes, delta = self._placement_usage(placement, strict=True)
        if not len(nodes):
            return
        self.state.apply(nodes, delta)
        if len(nodes) < 2 or bool((nodes[1:] > nodes[:-1]).all()):
            touched, added = nodes, delta  # distinct nodes in topology order: nothing to merge
        else:
            touched, inverse = np.unique(nodes, return_inverse=True)
            added = np.zeros((delta.shape[0], len(touched)), dtype=np.int64)
            np.add.at(added.T, inverse, delta.T)
        over = (self.state.free[:, touched] < 0) & (added > 0)
        if over.any():
            self.state.apply(nodes, -delta)
            bad = self.index.names[int(touched[np.flatnonzero(over.any(axis=0))[0]])]
            raise ValueError(
                f"placement on flavor {placement.flavor!r} no longer fits: node {bad} would be "
                "overcommitted; place the gang again"
            )
        # kept while reserved (positions stay valid until the next rebuild): preemption moves
        # reserved gangs out and back in many times per cycle
        self._usage_cache[id(placement)] = (placement, nodes, delta)

    def shift_usage(self, placements: Sequence[GangPlacement], sign: int) -> None:
        """Take reserved ``placements`` out (sign -1) or put them back (sign +1) in one update,
        without the overcommit check: for asking "would it fit with these gangs gone" and
        undoing that exactly. Nodes no longer in the flavor are skipped both ways."""
        parts = [self._placement_usage(p, strict=False) for p in placements]
        parts = [(nodes, delta) for nodes, delta in parts if len(nodes)]
        if parts:
            nodes = np.concatenate([n for n, _ in parts])
            delta = np.concatenate([d for _, d in parts], axis=1)
            self.state.apply(nodes, sign * delta)

    def release(self, placement: GangPlacement) -> None:
        """Give the placement's pods back (the workload finished or was evicted)."""
        nodes, delta = self._placement_usage(placement, strict=False)
        cached = self._usage_cache.get(id(placement))
        if cached is not None and cached[0] is placement:
            del self._usage_cache[id(placement)]
        if len(nodes):
            self.state.apply(nodes, -delta)

    # ---------------------------------------------------------------------------- nodes

    def update_node(self, node: Node) -> None:
        """A node was added or changed; nodes that keep their place are patched in place."""
        self._nodes[node.name] = node
        self._gone.discard(node.name)
        labels = node.metadata.labels
        if not flavor_selects(self.flavor, labels) or missing_level(labels, self.graph.topology_levels):
            if node.name in self.index.position:
                self._rebuild()
            return
        info = NodeInfo.from_node(node, self.index.levels)
        position = self.index.position.get(node.name)
        same_place = position is not None and self._infos[position].values == info.values
        if same_place and position is not None and set(info.allocatable) <= set(self.state.resources):
            self._infos[position] = info
            self.state.update_node(position, info)
            self._empty = None
            return
        self._rebuild()

    def remove_node(self, name: str) -> None:
        """The node is gone: it holds no capacity (pods reserved on it are released as usual)."""
        if name not in self._nodes:
            return
        self._gone.add(name)
        position = self.index.position.get(name)
        if position is None:
            return
        old = self._infos[position]
        gone = NodeInfo(old.name, old.labels, {}, old.taints, False, old.values)
        self._infos[position] = gone
        self.state.update_node(position, gone)
        self._empty = None

    def _rebuild(self) -> None:
        used = self.state.used_by_name()
        live = [n for name, n in self._nodes.items() if name not in self._gone]
        self._install(build_topology_graph(self.topology, self.flavor, live), used)


def _expand(picked: list[tuple[int, int]]) -> IntArray:
    """(node, pods) pairs → one node per rank, ranks in topology (node index) order."""
    if not picked:
        return np.zeros(0, dtype=np.int64)
    picked.sort()
    nodes = np.array([p[0] for p in picked], dtype=np.int64)
    repeats = np.array([p[1] for p in picked], dtype=np.int64)
    return np.repeat(nodes, repeats)


def _placement_units(request: GangRequest) -> list[tuple[PodSetRequest, ...]]:
    """Pod sets in placement order: a leader and its workers together, the rest alone."""
    units: list[tuple[PodSetRequest, ...]] = []
    seen: set[str] = set()
    for ps in request.pod_sets:
        if ps.name in seen:
            continue
        partner = next(
            (
                other
                for other in request.pod_sets
                if other is not ps and ps.group is not None and other.group == ps.group
            ),
            None,
        )
        if partner is not None and (ps.is_leader or partner.is_leader):
            leader, workers = (ps, partner) if ps.is_leader else (partner, ps)
            units.append((leader, workers))
            seen.update((ps.name, partner.name))
        else:
            units.append((ps,))
            seen.add(ps.name)
    return units
