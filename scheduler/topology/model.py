"""What the engine asks the placer for, and what it gets back.

A gang is one or more pod sets (a TrainJob's JobSet replicated jobs); each pod set is a count of
identical pods with Kueue's Topology Aware Scheduling annotations already parsed. Amounts are
the engine's integers (``runtimes.k8s.quantity.to_amount``: milli-cpu, bytes, whole GPUs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runtimes.k8s.core import PodTemplateSpec, Toleration, pod_requests
from runtimes.k8s.quantity import format_amount
from scheduler.api.kueue import (
    PODSET_GROUP_NAME,
    TopologyAssignment,
    TopologyDomainAssignment,
)
from scheduler.api.tas_annotations import check_podset_topology


@dataclass(frozen=True)
class PodSetRequest:
    """``count`` identical pods that must be placed together (one Workload PodSet).

    ``required_level``: the whole pod set inside one domain of that level, or no placement.
    ``preferred_level``: try to keep it inside one domain; fall back to wider domains.
    Neither: the same search as preferred (the lowest tier that holds the gang).
    ``unconstrained``: no locality wanted; pack onto the fullest nodes that fit (best fit).
    ``slice_level`` + ``slice_size``: every run of ``slice_size`` consecutive ranks inside one
    domain of ``slice_level``. ``group`` + ``is_leader``: a leader pod set (count 1) placed in
    the same domain as the worker pod set of the same group.
    """

    name: str
    count: int
    requests: Mapping[str, int]
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_level: str | None = None
    preferred_level: str | None = None
    unconstrained: bool = False
    slice_level: str | None = None
    slice_size: int = 1
    is_leader: bool = False
    group: str | None = None

    def describe_pod(self) -> str:
        """``8 nvidia.com/gpu`` (accelerators only when any), else every resource."""
        accelerators = {k: v for k, v in self.requests.items() if k not in ("cpu", "memory", "pods") and v}
        shown = accelerators or {k: v for k, v in self.requests.items() if v}
        if not shown:
            return "no resources"
        return ", ".join(f"{format_amount(k, v)} {k}" for k, v in sorted(shown.items()))


@dataclass(frozen=True)
class GangRequest:
    """Every pod set of one workload: all are placed, or none."""

    pod_sets: tuple[PodSetRequest, ...]

    @classmethod
    def of(cls, *pod_sets: PodSetRequest) -> GangRequest:
        """A gang with leaders marked: in a group of two pod sets the one with count 1 leads."""
        groups: dict[str, list[PodSetRequest]] = {}
        for pod_set in pod_sets:
            if pod_set.group is not None:
                groups.setdefault(pod_set.group, []).append(pod_set)
        leaders: set[str] = set()
        for group, members in groups.items():
            if len(members) == 1:
                continue
            if len(members) != 2:
                names = ", ".join(m.name for m in members)
                raise ValueError(
                    f"{PODSET_GROUP_NAME}={group!r} is set on pod sets {names}; "
                    "a group holds exactly two pod sets, a leader (count 1) and its workers"
                )
            ordered = sorted(members, key=lambda m: (m.count, pod_sets.index(m)))
            if ordered[0].count != 1:
                raise ValueError(
                    f"{PODSET_GROUP_NAME}={group!r}: one of pod sets {ordered[0].name!r}, "
                    f"{ordered[1].name!r} must have count 1 to be the leader"
                )
            leaders.add(ordered[0].name)
        marked = tuple(_replace_leader(p, p.name in leaders) if p.group is not None else p for p in pod_sets)
        return cls(marked)


def _replace_leader(pod_set: PodSetRequest, is_leader: bool) -> PodSetRequest:
    from dataclasses import replace

    return replace(pod_set, is_leader=is_leader)


# The placer's answers, built once per placement (mypyc: CONTRIBUTING.md). Not frozen (a frozen
# dataclass's __init__ is slower still), but treated as immutable: the book, the admission and the
# cycle's result share them.
@dataclass(slots=True, init=False)
class PodSetPlacement:
    """Where one pod set goes.

    ``level`` is the tier whose single domain holds the whole pod set (``None``: the pod set
    spans several top-level domains); ``domain`` is that domain's label values top→down.
    ``nodes[i]`` is the node of pod index i; ranks walk the nodes in topology order.
    ``spanned`` counts the child domains used directly below ``domain``.
    """

    name: str
    request: PodSetRequest
    level: str | None
    domain: tuple[str, ...]
    nodes: tuple[str, ...]
    spanned: int
    topology_levels: tuple[str, ...]
    # node → label values of every level the placer knows; ``value_positions`` picks the
    # Topology's own levels out of them (the NVLink clique level may be extra)
    node_values: Mapping[str, tuple[str, ...]]
    value_positions: tuple[int, ...]

    def __init__(
        self,
        name: str,
        request: PodSetRequest,
        level: str | None,
        domain: tuple[str, ...],
        nodes: tuple[str, ...],
        spanned: int,
        topology_levels: tuple[str, ...],
        node_values: Mapping[str, tuple[str, ...]],
        value_positions: tuple[int, ...],
    ) -> None:
        self.name = name
        self.request = request
        self.level = level
        self.domain = domain
        self.nodes = nodes
        self.spanned = spanned
        self.topology_levels = topology_levels
        self.node_values = node_values
        self.value_positions = value_positions

    @property
    def count(self) -> int:
        return len(self.nodes)

    @property
    def requests(self) -> Mapping[str, int]:
        return self.request.requests

    def to_topology_assignment(self) -> TopologyAssignment:
        """Kueue's ``podSetAssignments[].topologyAssignment``: per-leaf-domain pod counts.

        Like Kueue, when the Topology's lowest level is the hostname only hostnames are kept.
        """
        hostname_only = self.topology_levels[-1] == "kubernetes.io/hostname"
        levels = [self.topology_levels[-1]] if hostname_only else list(self.topology_levels)
        counts: dict[tuple[str, ...], int] = {}
        positions = self.value_positions[-1:] if hostname_only else self.value_positions
        for node in self.nodes:
            values = self.node_values[node]
            key = tuple(values[k] for k in positions)
            counts[key] = counts.get(key, 0) + 1
        domains = [
            TopologyDomainAssignment(values=list(values), count=count) for values, count in sorted(counts.items())
        ]
        return TopologyAssignment(levels=levels, domains=domains)


@dataclass(slots=True, init=False)
class GangPlacement:
    """A node for every pod of every pod set of one gang, on one ResourceFlavor."""

    flavor: str
    pod_sets: tuple[PodSetPlacement, ...]

    def __init__(self, flavor: str, pod_sets: tuple[PodSetPlacement, ...]) -> None:
        self.flavor = flavor
        self.pod_sets = pod_sets

    def pod_set(self, name: str) -> PodSetPlacement:
        for placement in self.pod_sets:
            if placement.name == name:
                return placement
        raise KeyError(name)

    def topology_assignments(self) -> dict[str, TopologyAssignment]:
        return {p.name: p.to_topology_assignment() for p in self.pod_sets}

    def to_dict(self) -> dict[str, object]:
        """JSON for `trainyard admit`: per pod set the level, domains and nodes."""
        return {
            "flavor": self.flavor,
            "podSets": [
                {
                    "name": p.name,
                    "level": p.level,
                    "domain": list(p.domain),
                    "nodes": list(p.nodes),
                    "topologyAssignment": p.to_topology_assignment().to_dict(),
                }
                for p in self.pod_sets
            ],
        }


@dataclass(slots=True, init=False)
class PlacementFailure:
    """No placement, in words a person can act on; ``requeue``: a failed node's gang must go back."""

    reason: str
    pod_set: str | None
    requeue: bool

    def __init__(self, reason: str, pod_set: str | None = None, requeue: bool = False) -> None:
        self.reason = reason
        self.pod_set = pod_set
        self.requeue = requeue


def pod_set_request_from_template(name: str, count: int, template: PodTemplateSpec) -> PodSetRequest:
    """Read a pod set's per-pod requests, tolerations, selector and Kueue TAS annotations.

    Raises ValueError naming the annotation and the accepted values when they are malformed (the
    rules are ``scheduler.api.tas_annotations``, the webhook's too). Level names are checked
    against the Topology later, by the placer.
    """
    topology, problems = check_podset_topology(template.metadata.annotations, count)
    if problems:
        raise ValueError(f"pod set {name!r}: {problems[0].engine}")
    requests = {res: q.amount(res) for res, q in pod_requests(template.spec).items()}
    return PodSetRequest(
        name=name,
        count=count,
        requests=requests,
        tolerations=tuple(template.spec.tolerations or ()),
        node_selector=dict(template.spec.node_selector or {}),
        required_level=topology.required,
        preferred_level=topology.preferred,
        unconstrained=topology.unconstrained,
        slice_level=topology.slice_level,
        slice_size=topology.slice_size,
        group=topology.group,
    )
