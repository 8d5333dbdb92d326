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
from scheduler.topology.capacity import CapacityState
from scheduler.topology.describe import PlacementDescriber
from scheduler.topology.distribution import Distributor, Picked, PodSetLevels, pack_best_fit
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
from scheduler.topology.leader import place_leader_with_workers, placement_units
from scheduler.topology.least_fragmenting import LeastFragmenting
from scheduler.topology.metrics import FreeCapacity, free_capacity
from scheduler.topology.model import (
    GangPlacement,
    GangRequest,
    PlacementFailure,
    PodSetPlacement,
    PodSetRequest,
)
from scheduler.topology.policy import PlacementPolicy, choose_by_policy, placer_view
from scheduler.topology.request_memo import RequestMemo
from scheduler.topology.reservations import Reservations
from scheduler.topology.shapes import PodShape, ShapeCounts


@dataclass(init=False)
class _Found:
    """One pod set's nodes (positions in topology order, one per pod) before naming."""

    request: PodSetRequest
    nodes: IntArray

    # mypyc: CONTRIBUTING.md
    def __init__(self, request: PodSetRequest, nodes: IntArray) -> None:
        self.request = request
        self.nodes = nodes


# check-only answers (``TopologyPlacer.fits``): room without nodes, no room without a reason
_CHECKED: list[_Found] = []
_NO_ROOM = PlacementFailure("no room (checked only)")


class TopologyPlacer:
    """Placement state of one TAS ResourceFlavor: its topology and the free capacity on it."""

    def __init__(
        self, topology: Topology, flavor: ResourceFlavor, graph: TopologyGraph, policy: PlacementPolicy | None = None
    ) -> None:
        self.topology = topology
        self.flavor = flavor
        self.policy = policy  # None: the placer's own choice; else a policy compared with it
        # read once: ``flavor.name`` is a pydantic property, which runs interpreted per placement
        self.flavor_name = flavor.metadata.name
        self._nodes: dict[str, Node] = {}
        self._gone: set[str] = set()
        self._install(graph, used=None)

    @classmethod
    def build(
        cls, topology: Topology, flavor: ResourceFlavor, nodes: Iterable[Node], policy: PlacementPolicy | None = None
    ) -> TopologyPlacer:
        node_list = list(nodes)
        placer = cls(topology, flavor, build_topology_graph(topology, flavor, node_list), policy)
        placer._nodes = {n.name: n for n in node_list}
        return placer

    def _install(self, graph: TopologyGraph, used: Mapping[str, Mapping[str, int]] | None) -> None:
        self.graph = graph
        self.index = TopologyIndex(graph)
        self._infos = list(graph.nodes)
        self.state = CapacityState(self.index, self._infos, self.flavor.spec.tolerations, used)
        self._empty: CapacityState | None = None
        self._room: tuple[int, int] | None = None  # the domain the last check-only search stopped at
        self.memo = RequestMemo(self.index, f"Topology {self.topology.name!r} (flavor {self.flavor_name!r})")
        self.distributor = Distributor(self.index)
        self.least_fragmenting = LeastFragmenting()
        self.describer = PlacementDescriber(self.index, graph.topology_levels)
        self.reservations = Reservations(self.state, self.index)

    @property
    def version(self) -> int:
        """Changes whenever free capacity does: an answer of ``place`` holds while it stays."""
        return self.state.version

    @property
    def grown(self) -> int:
        """Changes whenever free capacity may have grown: while it stays, a one-unit request
        ``place`` could not place still cannot be placed (less room never makes a fit)."""
        return self.state.grown

    def versions(self) -> tuple[int, int]:
        """(version, grown), to hand back to ``restore_versions`` once every change made after
        this call has been undone exactly (a preemption search putting its victims back)."""
        return self.state.version, self.state.grown

    def restore_versions(self, versions: tuple[int, int]) -> None:
        self.state.version, self.state.grown = versions

    @property
    def levels(self) -> tuple[str, ...]:
        """The levels a pod set may name: the Topology's, plus the NVLink clique level if present."""
        return self.index.levels

    # ------------------------------------------------------------------------------ place

    def place(self, request: GangRequest, *, simulate_empty: bool = False) -> GangPlacement | PlacementFailure:
        """A node for every pod of every pod set, or why not. Reserves nothing."""
        state = self._empty_state() if simulate_empty else self.state
        found = self._find(state, request, check_only=False)
        if isinstance(found, PlacementFailure):
            return found
        placement = GangPlacement(
            self.flavor_name, tuple(self.describer.describe(p, found[p.name].nodes) for p in request.pod_sets)
        )
        if not simulate_empty:
            self.reservations.placed(placement, [found[p.name].nodes for p in request.pod_sets])
        return placement

    def fits(self, request: GangRequest) -> tuple[int, int] | None:
        """Whether ``place`` would place the gang now, decided as it decides but without naming
        the nodes: a preemption search asks this after every victim it takes or gives back, and
        only its final answer is placed. None when it would not; else node positions
        [start, end) outside of which less room cannot undo the fit: the domain that holds a
        gang of one pod set (the level search stops at it or below while its room stays), the
        whole flavor for others."""
        if isinstance(self._find(self.state, request, check_only=True), PlacementFailure):
            return None
        room = self._room
        return room if room is not None and len(request.pod_sets) == 1 else (0, self.index.size)

    def _find(
        self, state: CapacityState, request: GangRequest, *, check_only: bool
    ) -> dict[str, _Found] | PlacementFailure:
        """Every pod set's nodes, or why not. With ``check_only`` the last unit is only checked
        for room (``_CHECKED``: its nodes are never read) and a failure carries no reason."""
        if check_only:
            self._room = None  # set by the last pod set when one domain is where the search stops
        version, grown = state.version, state.grown
        found: dict[str, _Found] = {}
        applied: list[tuple[IntArray, IntArray]] = []
        units = placement_units(request)
        try:
            for k, unit in enumerate(units):
                check = check_only and k == len(units) - 1
                result = (
                    self._place_group(state, unit[0], unit[1])
                    if len(unit) == 2
                    else self._place_pod_set(state, unit[0], check_only=check)
                )
                if isinstance(result, PlacementFailure):
                    return result
                for item in result:
                    found[item.request.name] = item
                    if k < len(units) - 1:  # later pod sets must see these pods
                        delta = state.pods_usage(item.request.requests, len(item.nodes))
                        state.apply(item.nodes, delta)
                        applied.append((item.nodes, delta))
        finally:
            for nodes, delta in reversed(applied):
                state.apply(nodes, -delta)
            state.version, state.grown = version, grown  # the tentative pods are gone: the same state as before
        return found

    def _empty_state(self) -> CapacityState:
        if self._empty is None:
            lasting = [info.lasting() for info in self._infos]
            self._empty = CapacityState(self.index, lasting, self.flavor.spec.tolerations)
        return self._empty

    def _resolve(self, ps: PodSetRequest) -> PodSetLevels | PlacementFailure:
        return self.memo.levels(ps)

    def _shape(self, state: CapacityState, ps: PodSetRequest) -> tuple[PodShape, ShapeCounts]:
        shape = self.memo.shape(state, ps)
        return shape, state.counts(shape, ps.tolerations)

    def _place_pod_set(
        self, state: CapacityState, ps: PodSetRequest, *, check_only: bool = False
    ) -> list[_Found] | PlacementFailure:
        """The pod set's nodes, or why not; with ``check_only``, ``_CHECKED`` once a domain is
        known to hold it (what follows cannot fail) and ``_NO_ROOM`` when none does."""
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
                f"{self.flavor_name!r} offers",
                ps.name,
            )
        if not check_only and state is self.state:
            self.least_fragmenting.record(shape, ps.tolerations, ps.count)  # the workload, placed or not
        if self.policy is not None:
            view = placer_view(self.index, state, counts, ps, levels, self.least_fragmenting.history)
            chosen = choose_by_policy(self.policy, view, ps, self.flavor_name)
            if isinstance(chosen, PlacementFailure):
                return _NO_ROOM if check_only else chosen
            return _CHECKED if check_only else [_Found(ps, chosen)]
        if ps.unconstrained and levels.slice_level is None:
            packed = pack_best_fit(counts.slots, ps)
            if packed is None:
                return PlacementFailure(
                    f"pod set {ps.name!r} needs {ps.count} pods × {ps.describe_pod()}; "
                    f"flavor {self.flavor_name!r} has room for {int(counts.slots.sum())}",
                    ps.name,
                )
            return [_Found(ps, packed)]
        distributor = self.distributor
        last = self.index.depth - 1
        for level in range(last, levels.top - 1, -1):
            need = ps.count // levels.unit(level)
            if level == last and levels.unit(level) == 1:
                # nodes in pods: their counts' bitsets answer without scanning every node
                if counts.leaf.most() >= need:
                    caps = counts.slots
                    break
                continue
            caps = distributor.unit_caps(counts, level, levels)
            if len(caps) and distributor.most_units(counts, level, levels, caps, state.version) >= need:
                break
        else:
            return _NO_ROOM if check_only else self.distributor.no_room(self.flavor_name, ps, levels, counts)
        if check_only:
            if level == last and levels.unit(level) == 1:
                node = counts.leaf.tightest(need)
                self._room = (node, node + 1)
            else:
                domain = int(np.argmax(caps))
                self._room = (int(self.index.starts[level][domain]), int(self.index.ends[level][domain]))
            return _CHECKED
        return [_Found(ps, self._nodes_at(state, ps, levels, counts, level, caps, need))]

    def _nodes_at(
        self,
        state: CapacityState,
        ps: PodSetRequest,
        levels: PodSetLevels,
        counts: ShapeCounts,
        level: int,
        caps: IntArray,
        need: int,
    ) -> IntArray:
        """The pod set's nodes inside one domain of ``level`` (the lowest that holds it)."""
        if level == self.index.depth - 1:
            if levels.unit(level) == 1:  # one node holds the pod set: the one it fragments least
                node = self.least_fragmenting.choose(state, counts, ps.requests, need)
            else:
                node = self.distributor.choose_domain(counts, level, caps, need, levels)
            return np.array([node] * ps.count, dtype=np.int64)
        domain = self.distributor.choose_domain(counts, level, caps, need, levels)
        picked = Picked(counts.slots)
        self.distributor.distribute(counts, level, domain, need, levels, picked)
        if levels.slice_level is None:  # a node the gang leaves partly free: the least fragmenting
            self.least_fragmenting.refine_partial(state, counts, picked, ps.requests, self.index)
        return picked.expand()

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
                f"{self.flavor_name!r} offers",
                workers.name,
            )
        placed = place_leader_with_workers(
            state,
            self.distributor,
            self.flavor_name,
            (leader, leader_counts),
            (workers, worker_shape, worker_counts),
            levels,
        )
        if isinstance(placed, PlacementFailure):
            return placed
        return [_Found(leader, placed[0]), _Found(workers, placed[1])]

    # ------------------------------------------------------------------------- describing

    def describe_nodes(self, request: PodSetRequest, positions: IntArray) -> PodSetPlacement:
        """The placement of ``request`` on the nodes at ``positions`` (one per rank)."""
        return self.describer.describe(request, positions)

    def lowest_common_domain(self, nodes: IntArray) -> tuple[int, int, int]:
        """(level, domain, children spanned) of the lowest domain holding all ``nodes``."""
        return self.describer.lowest_common_domain(nodes)

    # ------------------------------------------------------------------ failures, metrics

    def replace_failed_node(self, placement: GangPlacement, failed_node: str) -> GangPlacement | PlacementFailure:
        """Move only ``failed_node``'s pods (see ``scheduler.topology.failures``)."""
        return replace_failed_node(self.index, self.state, self.describer, placement, failed_node)

    def free_capacity(self, resource: str = "nvidia.com/gpu") -> FreeCapacity:
        """Free ``resource`` per domain and how fragmented it is, for metrics."""
        return free_capacity(self.state, resource)

    # -------------------------------------------------------------------- reserve / release

    def reserve(self, placement: GangPlacement) -> None:
        """Take the placement's pods from the free capacity (ValueError if that overcommits)."""
        self.reservations.reserve(placement)

    def shift_usage(self, placements: Sequence[GangPlacement], sign: int) -> None:
        """Take reserved ``placements`` out (sign -1) or put them back (sign +1) in one update,
        without the overcommit check (``Reservations.shift``)."""
        self.reservations.shift(placements, sign)

    def release(self, placement: GangPlacement) -> None:
        """Give the placement's pods back (the workload finished or was evicted)."""
        self.reservations.release(placement)

    def holds_any(self, placement: GangPlacement, start: int, end: int) -> bool:
        """Whether the reserved ``placement`` has a pod on a node at positions [start, end)."""
        return self.reservations.holds_any(placement, start, end)

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
