"""The Topology page's model: each topology-aware flavor's nodes by level, GPUs by queue.

Nodes are arranged as the placer arranges them (``scheduler.topology.build_topology_graph``:
the Topology's levels, an NVLink level where nodes carry a clique label, hosts last); nodes in
no topology-aware flavor form a flat group of their own. A node's GPUs are used by the
ClusterQueues whose admitted gangs the engine placed there, free, or unavailable (the node is
not Ready or is cordoned). Fragmentation is what the simulator reports
(``simulations.fragmentation.stranded_gpus``): the free GPUs that cannot host the smallest
pending gang. A page shows one level under one domain at a time, so 10,000 nodes are a few
dozen boxes until someone drills down.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import numpy as np

from dashboard.jobs import GPU, placed_nodes
from runtimes.k8s.core import Node
from scheduler.api.kueue import ResourceFlavor, Topology
from scheduler.engine import AdmissionEngine, WorkloadState
from scheduler.topology import HOSTNAME_LABEL, NodeInfo, build_topology_graph
from simulations.fragmentation import stranded_gpus

NO_TOPOLOGY = "(no topology)"


@dataclass(frozen=True)
class FlavorLayout:
    flavor: str
    levels: tuple[str, ...]  # top → down; the last is the hostname
    nodes: list[NodeInfo]  # topology order: every domain's nodes are contiguous


@dataclass(frozen=True)
class Gang:
    """The smallest pending gang: what fragmentation is measured against."""

    workload: str
    pods: int
    per_pod: int

    @property
    def total(self) -> int:
        return self.pods * self.per_pod


@dataclass
class Domain:
    """One box on the page: a domain (or a node) with its GPUs by state."""

    label: str
    path: tuple[str, ...]
    nodes: int = 0
    gpus: int = 0
    unavailable: int = 0
    fragmented: int = 0
    used: dict[str, int] = field(default_factory=dict)  # ClusterQueue -> GPUs
    job_pods: int = 0  # pods of the selected job inside
    cells: list[str] = field(default_factory=list)  # a node's GPUs, one state each (nodes only)

    @property
    def free(self) -> int:
        return self.gpus - self.unavailable - sum(self.used.values())


@dataclass(frozen=True)
class LayoutInputs:
    """What the layouts are made of, taken from the engine in one go (the event loop's thread may
    change the engine while a layout is built in another)."""

    nodes: list[Node]
    flavors: list[ResourceFlavor]
    topologies: dict[str, Topology]

    @classmethod
    def of(cls, engine: AdmissionEngine) -> LayoutInputs:
        flavors = sorted(engine.flavors().values(), key=lambda f: f.name)
        return cls(list(engine.nodes().values()), flavors, engine.topologies())

    @property
    def key(self) -> tuple[int, ...]:
        objects: list[object] = [*self.nodes, *self.flavors, *self.topologies.values()]
        return (len(self.nodes), *map(id, objects))


def build_layouts(inputs: LayoutInputs) -> list[FlavorLayout]:
    layouts: list[FlavorLayout] = []
    placed: set[str] = set()
    for flavor in inputs.flavors:
        topology = inputs.topologies.get(flavor.spec.topology_name or "")
        if topology is None:
            continue
        try:
            graph = build_topology_graph(topology, flavor, inputs.nodes)
        except ValueError:
            continue  # an invalid Topology: the webhook refuses it, the engine places nothing on it
        layouts.append(FlavorLayout(flavor.name, graph.levels, graph.nodes))
        placed.update(info.name for info in graph.nodes)
    rest = sorted((n for n in inputs.nodes if n.name not in placed), key=lambda n: n.name)
    if rest:
        infos = [NodeInfo.from_node(node, (HOSTNAME_LABEL,)) for node in rest]
        layouts.append(FlavorLayout(NO_TOPOLOGY, (HOSTNAME_LABEL,), infos))
    return layouts


class LayoutCache:
    """The layouts, rebuilt in a thread when a Node, flavor or Topology object changed, at most
    every ``min_seconds``: 10,000 nodes take about a second to arrange, and on a large cluster
    some Node's status changes every second. Until a rebuild lands the page shows the previous
    layouts and says it is stale (it refreshes itself). What the GPUs are used for is never cached."""

    def __init__(self, min_seconds: float = 5.0) -> None:
        self.min_seconds = min_seconds
        self._key: tuple[int, ...] | None = None
        self._built_at = 0.0
        self._layouts: list[FlavorLayout] = []
        self._building: asyncio.Task[None] | None = None
        self.stale = False  # the last layouts handed out predate a change (a rebuild is on its way)

    async def get(self, engine: AdmissionEngine) -> list[FlavorLayout]:
        inputs = LayoutInputs.of(engine)
        key = inputs.key
        if self._key is None:  # nothing to show yet: build now
            await self._build(inputs, key)
        elif key != self._key and self._building is None:
            due = time.monotonic() - self._built_at >= self.min_seconds
            if due:
                self._building = asyncio.create_task(self._build(inputs, key), name="dashboard-layouts")
        self.stale = key != self._key
        return self._layouts

    async def _build(self, inputs: LayoutInputs, key: tuple[int, ...]) -> None:
        try:
            self._layouts = await asyncio.to_thread(build_layouts, inputs)
            self._key = key
            self._built_at = time.monotonic()
        finally:
            self._building = None

    async def close(self) -> None:
        """Wait for a rebuild in flight (a server stopping leaves no task behind)."""
        if self._building is not None:
            await asyncio.gather(self._building, return_exceptions=True)


def usage_by_node(engine: AdmissionEngine) -> dict[str, dict[str, int]]:
    """node -> ClusterQueue -> GPUs its admitted gangs hold there."""
    used: dict[str, dict[str, int]] = {}
    for info in engine.all_workloads():
        admission = info.admission
        if info.state is not WorkloadState.ADMITTED or admission is None:
            continue
        for gang in admission.placements.values():
            for pod_set in gang.pod_sets:
                gpus = pod_set.requests.get(GPU, 0)
                if not gpus:
                    continue
                for node in pod_set.nodes:
                    by_queue = used.setdefault(node, {})
                    by_queue[admission.cluster_queue] = by_queue.get(admission.cluster_queue, 0) + gpus
    return used


def smallest_pending_gang(engine: AdmissionEngine) -> Gang | None:
    """The pending workload asking for the fewest GPUs (ties: fewer pods), as the simulator picks it."""
    best: tuple[int, int, int, str] | None = None
    for info in engine.all_workloads():
        if info.state is not WorkloadState.PENDING:
            continue
        per_pod = max((pod_set.requests.get(GPU, 0) for pod_set in info.pod_sets), default=0)
        pods = sum(pod_set.count for pod_set in info.pod_sets)
        if per_pod == 0:
            continue
        candidate = (per_pod * pods, per_pod, pods, info.key)
        if best is None or candidate < best:
            best = candidate
    return None if best is None else Gang(best[3], best[2], best[1])


@dataclass
class NodeStates:
    """Per node of a layout (in its order): GPUs, GPUs unavailable, stranded free GPUs."""

    gpus: list[int]
    unavailable: list[int]
    stranded: list[int]


def node_states(layout: FlavorLayout, used: dict[str, dict[str, int]], gang: Gang | None) -> NodeStates:
    gpus = [info.allocatable.get(GPU, 0) for info in layout.nodes]
    unavailable = [count if not info.usable else 0 for count, info in zip(gpus, layout.nodes, strict=True)]
    free = np.array(
        [
            0 if not info.usable else max(0, count - sum(used.get(info.name, {}).values()))
            for count, info in zip(gpus, layout.nodes, strict=True)
        ],
        dtype=np.int64,
    )
    stranded = stranded_gpus(free, gang.per_pod, gang.pods) if gang is not None else np.zeros_like(free)
    return NodeStates(gpus, unavailable, [int(v) for v in stranded])


def _add_node(domain: Domain, info: NodeInfo, index: int, states: NodeStates, used: dict[str, int], pods: int) -> None:
    domain.nodes += 1
    domain.gpus += states.gpus[index]
    domain.unavailable += states.unavailable[index]
    domain.fragmented += states.stranded[index]
    domain.job_pods += pods
    for queue, gpus in used.items():
        domain.used[queue] = domain.used.get(queue, 0) + gpus


def node_cells(index: int, states: NodeStates, used: dict[str, int]) -> list[str]:
    """One state per GPU of a node: the queue using it, ``unavailable``, ``fragmented`` or ``free``."""
    if states.unavailable[index]:
        return ["unavailable"] * states.gpus[index]
    cells = [queue for queue in sorted(used) for _ in range(used[queue])]
    free = max(0, states.gpus[index] - len(cells))
    stranded = min(free, states.stranded[index])
    return cells + ["fragmented"] * stranded + ["free"] * (free - stranded)


def domains_under(
    layout: FlavorLayout,
    states: NodeStates,
    used: dict[str, dict[str, int]],
    path: tuple[str, ...],
    job_nodes: dict[str, int],
) -> tuple[str, list[Domain]]:
    """The level below ``path`` (a prefix of label values) and its domains, in topology order;
    at the hostname level each domain is a node with its GPU cells."""
    depth = len(path)
    node_level = depth == len(layout.levels) - 1
    groups: dict[str, Domain] = {}
    for index, info in enumerate(layout.nodes):
        if info.values[:depth] != path:
            continue
        value = info.values[depth]
        domain = groups.get(value)
        if domain is None:
            domain = groups[value] = Domain(value, (*path, value))
        node_used = used.get(info.name, {})
        _add_node(domain, info, index, states, node_used, job_nodes.get(info.name, 0))
        if node_level:
            domain.cells = node_cells(index, states, node_used)
    return layout.levels[depth], list(groups.values())


def flavor_total(
    layout: FlavorLayout, states: NodeStates, used: dict[str, dict[str, int]], job_nodes: dict[str, int]
) -> Domain:
    total = Domain(layout.flavor, ())
    for index, info in enumerate(layout.nodes):
        _add_node(total, info, index, states, used.get(info.name, {}), job_nodes.get(info.name, 0))
    return total


def job_nodes(engine: AdmissionEngine, key: str | None) -> dict[str, int]:
    """node -> pods of the workload ``key`` the engine placed there (empty: unknown or not placed)."""
    info = engine.workload(key) if key else None
    return placed_nodes(info) if info is not None else {}
