"""The topology of one TAS ResourceFlavor: a networkx tree of domains, and its compact index.

Nodes are selected by the flavor's ``nodeLabels`` and grouped by the Topology's level labels
(zone → spine → block → host). When the nodes carry ``nvidia.com/gpu.clique`` and the Topology
does not list it, an NVLink level is inserted just above the hosts (a rack-scale NVL72 clique
spans nodes), so a gang can be kept inside one NVLink domain.

The tree is the model a person inspects (``TopologyGraph.graph``); the placer works on the
``TopologyIndex`` derived from it: nodes sorted in topology order so that every domain at every
level is one contiguous range of node indices, and aggregates are ``numpy.add.reduceat`` calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import numpy.typing as npt

from runtimes.k8s.core import SCHEDULING_TAINT_EFFECTS, Node, Taint
from scheduler.api.kueue import ResourceFlavor, Topology

HOSTNAME_LABEL = "kubernetes.io/hostname"
NVLINK_CLIQUE_LABEL = "nvidia.com/gpu.clique"
ROOT = "flavor"
# Taints the node lifecycle controller and kubelet add and remove with a node's conditions (and
# kubectl cordon's): a node is expected to lose them again, so "could it ever fit" ignores them.
CONDITION_TAINT_KEYS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/network-unavailable",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/pid-pressure",
    }
)

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class NodeInfo:
    """One node as the placer sees it (amounts are engine integers)."""

    name: str
    labels: dict[str, str]
    allocatable: dict[str, int]
    taints: tuple[Taint, ...]
    usable: bool  # Ready and not cordoned
    values: tuple[str, ...]  # one label value per level, top → down

    @classmethod
    def from_node(cls, node: Node, levels: tuple[str, ...]) -> NodeInfo:
        labels = dict(node.metadata.labels)
        values = tuple(_level_value(node.name, labels, label) for label in levels)
        return cls(
            name=node.name,
            labels=labels,
            allocatable={res: q.amount(res) for res, q in node.status.allocatable.items()},
            taints=tuple(t for t in node.spec.taints if t.effect in SCHEDULING_TAINT_EFFECTS),
            usable=node.schedulable,
            values=values,
        )

    def lasting(self) -> NodeInfo:
        """The node as it will be once ready and uncordoned again: what an empty cluster holds
        when the webhook asks whether a gang could ever fit (a node that registered a moment ago,
        or went NotReady, must not make a job "never fit")."""
        taints = tuple(t for t in self.taints if t.key not in CONDITION_TAINT_KEYS)
        return NodeInfo(self.name, self.labels, self.allocatable, taints, True, self.values)


def _level_value(name: str, labels: dict[str, str], label: str) -> str:
    if label == HOSTNAME_LABEL:
        return labels.get(label) or name
    if label == NVLINK_CLIQUE_LABEL and label not in labels:
        return f"node:{name}"  # a node outside any clique is an NVLink domain of its own
    return labels[label]


def effective_levels(topology: Topology, nodes_labels: Iterable[dict[str, str]]) -> tuple[str, ...]:
    """The Topology's levels, plus the NVLink clique level when nodes carry it, ending at hosts."""
    levels = list(topology.level_labels)
    if NVLINK_CLIQUE_LABEL not in levels and any(NVLINK_CLIQUE_LABEL in lb for lb in nodes_labels):
        at = len(levels) - 1 if levels[-1] == HOSTNAME_LABEL else len(levels)
        levels.insert(at, NVLINK_CLIQUE_LABEL)
    if levels[-1] != HOSTNAME_LABEL:
        levels.append(HOSTNAME_LABEL)  # the placer always ends at nodes, one domain each
    return tuple(levels)


def flavor_selects(flavor: ResourceFlavor, labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in flavor.spec.node_labels.items())


def missing_level(labels: dict[str, str], levels: tuple[str, ...]) -> str | None:
    for label in levels:
        if label not in (HOSTNAME_LABEL, NVLINK_CLIQUE_LABEL) and label not in labels:
            return label
    return None


@dataclass
class TopologyGraph:
    """A flavor's domain tree: ``graph`` has the root ``"flavor"``, one vertex per domain
    (``(level label, values top→down)``) and one per node (``("node", name)``)."""

    flavor: str
    topology: str
    topology_levels: tuple[str, ...]
    levels: tuple[str, ...]
    nodes: list[NodeInfo]  # topology order
    graph: nx.DiGraph
    excluded: dict[str, str] = field(default_factory=dict)  # node name → why it is not in the flavor


def check_flavor(topology: Topology, flavor: ResourceFlavor) -> None:
    if not topology.level_labels:
        raise ValueError(f"Topology {topology.name!r}: spec.levels is empty; list at least one node label")
    if flavor.spec.topology_name != topology.name:
        raise ValueError(
            f"ResourceFlavor {flavor.name!r}: spec.topologyName is {flavor.spec.topology_name!r}, "
            f"not {topology.name!r}; build the placer with the Topology the flavor names"
        )
    if HOSTNAME_LABEL in topology.level_labels[:-1]:
        raise ValueError(f"Topology {topology.name!r}: {HOSTNAME_LABEL} may only be the lowest level of spec.levels")


def build_topology_graph(topology: Topology, flavor: ResourceFlavor, nodes: Iterable[Node]) -> TopologyGraph:
    """Select the flavor's nodes and arrange them in the Topology's domains."""
    check_flavor(topology, flavor)
    selected: list[Node] = []
    excluded: dict[str, str] = {}
    base_levels = tuple(topology.level_labels)
    for node in nodes:
        labels = node.metadata.labels
        if not flavor_selects(flavor, labels):
            excluded[node.name] = f"labels do not match ResourceFlavor {flavor.name!r} spec.nodeLabels"
            continue
        missing = missing_level(labels, base_levels)
        if missing is not None:
            excluded[node.name] = f"has no {missing} label (a level of Topology {topology.name!r})"
            continue
        selected.append(node)
    levels = effective_levels(topology, (n.metadata.labels for n in selected))
    infos = sorted((NodeInfo.from_node(n, levels) for n in selected), key=lambda i: (i.values, i.name))
    graph = nx.DiGraph()
    graph.add_node(ROOT, kind="root", flavor=flavor.name)
    for info in infos:
        parent: object = ROOT
        for depth, label in enumerate(levels[:-1]):
            vertex = (label, info.values[: depth + 1])
            if vertex not in graph:
                graph.add_node(vertex, kind="domain", level=label, value=info.values[depth])
                graph.add_edge(parent, vertex)
            parent = vertex
        leaf = ("node", info.name)
        graph.add_node(leaf, kind="node", level=levels[-1], value=info.values[-1], usable=info.usable)
        graph.add_edge(parent, leaf)
    return TopologyGraph(flavor.name, topology.name, base_levels, levels, infos, graph, excluded)


class TopologyIndex:
    """Compact arrays over the graph. Internal level 0 is the whole flavor (one domain);
    levels 1..K are ``levels``; the last one has one domain per node.

    ``node_domain[l][i]``: domain at level l of node i. ``starts[l][d]``: first node of domain d.
    ``child_lo[l][d]`` / ``child_hi[l][d]``: its children's index range at level l+1.
    """

    def __init__(self, topology_graph: TopologyGraph) -> None:
        self._index(topology_graph.levels, topology_graph.nodes)

    @classmethod
    def of_nodes(cls, levels: tuple[str, ...], nodes: Sequence[NodeInfo]) -> TopologyIndex:
        """The index of ``nodes`` given in topology order (each domain's nodes contiguous), for a
        caller that groups its nodes itself instead of building a graph (the simulator's ledger)."""
        index = cls.__new__(cls)
        index._index(levels, nodes)
        return index

    def _index(self, levels: tuple[str, ...], nodes: Sequence[NodeInfo]) -> None:
        self.levels = levels
        self.level_names: tuple[str | None, ...] = (None, *self.levels)
        self.names = [info.name for info in nodes]
        self.position = {name: i for i, name in enumerate(self.names)}
        n = len(self.names)
        self.size = n
        depth = len(self.level_names)
        node_domain: list[IntArray] = [np.zeros(n, dtype=np.int64)]
        for level in range(1, depth - 1):
            keys = [info.values[:level] for info in nodes]
            ids = np.zeros(n, dtype=np.int64)
            current = -1
            previous: tuple[str, ...] | None = None
            for i, key in enumerate(keys):
                if key != previous:
                    current += 1
                    previous = key
                ids[i] = current
            node_domain.append(ids)
        node_domain.append(np.arange(n, dtype=np.int64))
        self.node_domain = node_domain
        # the same as plain lists, for the per-node paths that read one element at a time
        self.node_domain_lists: list[list[int]] = [ids.tolist() for ids in node_domain]
        self.starts: list[IntArray] = []
        for ids in node_domain:
            if n == 0:
                self.starts.append(np.zeros(0, dtype=np.int64))
                continue
            change = np.flatnonzero(np.diff(ids)) + 1
            self.starts.append(np.concatenate([np.zeros(1, dtype=np.int64), change]).astype(np.int64))
        self.counts = [len(s) for s in self.starts]
        self.ends = [np.append(s[1:], n).astype(np.int64) for s in self.starts]
        self.child_lo: list[IntArray] = []
        self.child_hi: list[IntArray] = []
        for level in range(depth - 1):
            lo = node_domain[level + 1][self.starts[level]] if n else np.zeros(0, dtype=np.int64)
            self.child_lo.append(lo.astype(np.int64))
            self.child_hi.append(np.append(lo[1:], self.counts[level + 1]).astype(np.int64))
        self.values: list[list[tuple[str, ...]]] = [
            [nodes[int(s)].values[:level] for s in self.starts[level]] for level in range(depth)
        ]
        self.node_values = {info.name: info.values for info in nodes}

    @property
    def depth(self) -> int:
        return len(self.level_names)

    def level_index(self, label: str) -> int | None:
        for i, name in enumerate(self.level_names):
            if name == label:
                return i
        return None

    def domain_of(self, node: int, level: int) -> int:
        return int(self.node_domain[level][node])

    def domain_label(self, level: int, domain: int) -> str:
        if level == 0:
            return "the flavor"
        return f"{self.level_names[level]}={self.values[level][domain][-1]}"
