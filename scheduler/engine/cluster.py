"""What the engine knows about the cluster's queue objects, compiled for fast admission.

Kueue objects arrive as pydantic models; ``ClusterModel.rebuild`` turns them into a quota tree
of ``QuotaNode`` (ClusterQueues as leaves, Cohorts above) and per-ClusterQueue lookup tables.
Rebuilding is cheap and happens only when a queue object changes, never per workload.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import (
    ClusterQueue,
    ClusterQueuePreemption,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    ResourceGroup,
    Topology,
    WorkloadPriorityClass,
)
from scheduler.engine.admission_checks import AdmissionCheckRegistry, cluster_queue_inactive_reason
from scheduler.engine.admitted import AdmittedWorkloads
from scheduler.engine.flavor_match import PodSetPlan
from scheduler.engine.queues import ClusterQueueQueue
from scheduler.engine.quota import (
    FlavorResource,
    QuotaNode,
    recompute_cohort_usage,
    recompute_subtree_quotas,
)


@dataclass(slots=True)
class ResourceGroupInfo:
    resources: tuple[str, ...]
    flavors: tuple[str, ...]


@dataclass(slots=True, init=False)
class QueuePolicies:
    """What flavor assignment and the preemption oracle read of a ClusterQueue's spec for every
    head they weigh, read once when the ClusterQueue is compiled."""

    try_next_when_borrowing: bool
    try_next_when_preempting: bool
    preemption_over_borrowing: bool  # flavorFungibility.preference
    preemption: ClusterQueuePreemption

    # mypyc: CONTRIBUTING.md
    def __init__(self, spec: ClusterQueue) -> None:
        fungibility = spec.spec.flavor_fungibility
        self.try_next_when_borrowing = fungibility.try_next_when_borrowing
        self.try_next_when_preempting = fungibility.try_next_when_preempting
        self.preemption_over_borrowing = fungibility.preference == "PreemptionOverBorrowing"
        self.preemption = spec.spec.preemption


@dataclass(eq=False, slots=True)
class ClusterQueueInfo:
    """One ClusterQueue, compiled."""

    name: str
    spec: ClusterQueue
    node: QuotaNode
    groups: list[ResourceGroupInfo]
    group_of: dict[str, int]  # resource -> index into groups
    queue: ClusterQueueQueue
    admitted: AdmittedWorkloads = field(default_factory=AdmittedWorkloads)
    inactive_reason: str | None = None
    # (id(pod set), count) -> what flavor assignment precomputes for it (flavor_match.PodSetPlan)
    pod_set_plans: dict[tuple[int, int], PodSetPlan] = field(default_factory=dict)
    # namespace -> does namespaceSelector match it; a namespace change rebuilds this object
    namespace_matches: dict[str, bool] = field(default_factory=dict)
    policies: QueuePolicies = field(init=False)

    def __post_init__(self) -> None:
        self.policies = QueuePolicies(self.spec)

    @property
    def active(self) -> bool:
        return self.inactive_reason is None

    @property
    def cohort(self) -> str | None:
        return self.spec.spec.cohort_name

    def covers(self, resource: str) -> bool:
        return resource in self.group_of


def _quota_tables(
    groups: list[ResourceGroup],
) -> tuple[dict[FlavorResource, int], dict[FlavorResource, int], dict[FlavorResource, int]]:
    nominal: dict[FlavorResource, int] = {}
    borrowing: dict[FlavorResource, int] = {}
    lending: dict[FlavorResource, int] = {}
    for group in groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                fr = (flavor.name, quota.name)
                nominal[fr] = quota.nominal_quota.amount(quota.name)
                if quota.borrowing_limit is not None:
                    borrowing[fr] = quota.borrowing_limit.amount(quota.name)
                if quota.lending_limit is not None:
                    lending[fr] = quota.lending_limit.amount(quota.name)
    return nominal, borrowing, lending


class ClusterModel:
    """Queue objects by name, and the quota tree compiled from them."""

    def __init__(self) -> None:
        self.flavors: dict[str, ResourceFlavor] = {}
        self.cluster_queue_objects: dict[str, ClusterQueue] = {}
        self.cohort_objects: dict[str, Cohort] = {}
        self.local_queues: dict[str, LocalQueue] = {}  # "namespace/name"
        self.priority_classes: dict[str, WorkloadPriorityClass] = {}
        self.topologies: dict[str, Topology] = {}
        self.nodes: dict[str, Node] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.cluster_queues: dict[str, ClusterQueueInfo] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        # stopPolicy HoldAndDrain: their admitted workloads are evicted at the next cycle
        self.draining_cluster_queues: list[str] = []
        self.draining_local_queues: set[str] = set()  # "namespace/name"
        # LocalQueues with any stopPolicy but None: every head would otherwise look its own up
        self.stopped_local_queues: set[str] = set()  # "namespace/name"
        self.admission_checks = AdmissionCheckRegistry()  # AdmissionChecks and their parameters

    def store(self, obj: Resource) -> bool:
        """Add or replace a queue object or Node in its table; False for a kind the engine does not take."""
        match obj:
            case ResourceFlavor():
                self.flavors[obj.name] = obj
            case ClusterQueue():
                self.cluster_queue_objects[obj.name] = obj
            case Cohort():
                self.cohort_objects[obj.name] = obj
            case LocalQueue():
                self.local_queues[f"{obj.namespace or 'default'}/{obj.name}"] = obj
            case WorkloadPriorityClass():
                self.priority_classes[obj.name] = obj
            case Topology():
                self.topologies[obj.name] = obj
            case Node():
                self.nodes[obj.name] = obj
            case _:
                # AdmissionCheck, ProvisioningRequestConfig, MultiKueueConfig, MultiKueueCluster
                return self.admission_checks.apply(obj)
        return True

    def remove(self, kind: str, name: str, namespace: str | None) -> None:
        """Drop an object from its table (``namespace`` only for a LocalQueue); unknown kinds are an error."""
        if self.admission_checks.delete(kind, name):
            return
        tables: dict[str, dict[str, object]] = {
            "ResourceFlavor": self.flavors,  # type: ignore[dict-item]
            "ClusterQueue": self.cluster_queue_objects,  # type: ignore[dict-item]
            "Cohort": self.cohort_objects,  # type: ignore[dict-item]
            "LocalQueue": self.local_queues,  # type: ignore[dict-item]
            "WorkloadPriorityClass": self.priority_classes,  # type: ignore[dict-item]
            "Topology": self.topologies,  # type: ignore[dict-item]
            "Node": self.nodes,  # type: ignore[dict-item]
        }
        if kind not in tables:
            raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(tables)}")
        tables[kind].pop(f"{namespace or 'default'}/{name}" if kind == "LocalQueue" else name, None)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        labels = self.namespaces.get(namespace)
        if labels is None:
            labels = {}
        # The API server sets this label on every namespace (NamespaceDefaultLabelName).
        return {"kubernetes.io/metadata.name": namespace, **labels}

    def rebuild(self, previous: dict[str, ClusterQueueInfo]) -> None:
        """Recompile the quota tree; queues and admitted sets carry over from ``previous``."""
        self.cohorts = {}
        infos: dict[str, ClusterQueueInfo] = {}
        for name, cq in self.cluster_queue_objects.items():
            nominal, borrowing, lending = _quota_tables(cq.spec.resource_groups)
            node = QuotaNode(name=name, is_cohort=False, nominal=nominal)
            if cq.spec.cohort_name:
                node.borrowing_limit = borrowing
                node.lending_limit = lending
            if cq.spec.fair_sharing is not None:
                node.fair_weight = cq.spec.fair_sharing.weight_value()
            groups = [
                ResourceGroupInfo(tuple(g.covered_resources), tuple(f.name for f in g.flavors))
                for g in cq.spec.resource_groups
            ]
            group_of = {resource: i for i, g in enumerate(groups) for resource in g.resources}
            old = previous.get(name)
            strict = cq.spec.queueing_strategy == "StrictFIFO"
            if old is not None and old.queue.strict_fifo == strict:
                queue = old.queue
            else:
                queue = ClusterQueueQueue(name, strict)
                if old is not None:
                    for workload in old.queue.pending():
                        queue.push(workload)
            info = ClusterQueueInfo(name, cq, node, groups, group_of, queue)
            if old is not None:
                info.admitted = old.admitted
            infos[name] = info
        for info in infos.values():
            cohort_name = info.cohort
            if cohort_name:
                cohort = self._cohort_node(cohort_name)
                info.node.parent = cohort
                cohort.children.append(info.node)
        cyclic = self._link_cohorts()
        for info in infos.values():
            info.inactive_reason = self._inactive_reason(info, cyclic)
            usage: dict[FlavorResource, int] = {}
            for workload in info.admitted.values():
                if workload.admission is not None:
                    for fr, amount in workload.admission.usage.items():
                        usage[fr] = usage.get(fr, 0) + amount
            info.node.usage = usage
        for root in self.roots(infos):
            recompute_subtree_quotas(root)
            recompute_cohort_usage(root)
        self.cluster_queues = infos
        self.draining_cluster_queues = [n for n, i in infos.items() if i.spec.spec.stop_policy == "HoldAndDrain"]
        self.draining_local_queues = {k for k, q in self.local_queues.items() if q.spec.stop_policy == "HoldAndDrain"}
        self.stopped_local_queues = {k for k, q in self.local_queues.items() if q.spec.stop_policy != "None"}

    def roots(self, infos: dict[str, ClusterQueueInfo] | None = None) -> list[QuotaNode]:
        seen: dict[int, QuotaNode] = {}
        for info in (infos or self.cluster_queues).values():
            root = info.node.root()
            seen[id(root)] = root
        return list(seen.values())

    def _cohort_node(self, name: str) -> QuotaNode:
        node = self.cohorts.get(name)
        if node is None:
            node = self.cohorts[name] = QuotaNode(name=name, is_cohort=True)
        return node

    def _link_cohorts(self) -> set[str]:
        """Give Cohort objects their quotas and parents; returns cohorts caught in a cycle."""
        for name, cohort in self.cohort_objects.items():
            node = self._cohort_node(name)
            nominal, borrowing, lending = _quota_tables(cohort.spec.resource_groups)
            node.nominal = nominal
            if cohort.spec.fair_sharing is not None:
                node.fair_weight = cohort.spec.fair_sharing.weight_value()
            if cohort.spec.parent_name:
                node.borrowing_limit = borrowing
                node.lending_limit = lending
        cyclic: set[str] = set()
        for name, cohort in self.cohort_objects.items():
            parent_name = cohort.spec.parent_name
            if not parent_name:
                continue
            # Walk up from the would-be parent; meeting ``name`` again means a cycle.
            walker: str | None = parent_name
            path = {name}
            while walker is not None and walker not in path:
                path.add(walker)
                parent_object = self.cohort_objects.get(walker)
                walker = parent_object.spec.parent_name if parent_object else None
            if walker is not None:
                cyclic |= path
                continue
            node, parent = self._cohort_node(name), self._cohort_node(parent_name)
            node.parent = parent
            parent.children.append(node)
        return cyclic

    def _inactive_reason(self, info: ClusterQueueInfo, cyclic: set[str]) -> str | None:
        for group in info.groups:
            for flavor in group.flavors:
                if flavor not in self.flavors:
                    return f"ResourceFlavor {flavor!r} does not exist (FlavorNotFound)"
                topology = self.flavors[flavor].spec.topology_name
                if topology and topology not in self.topologies:
                    return f"Topology {topology!r} of ResourceFlavor {flavor!r} does not exist (TopologyNotFound)"
        cohort = info.cohort
        if cohort and any(a.name in cyclic for a in [info.node, *info.node.ancestors()]):
            return f"cohort {cohort!r} is part of a cycle of Cohort parents"
        if (checks := cluster_queue_inactive_reason(info.spec, self.admission_checks)) is not None:
            return checks
        if info.spec.spec.stop_policy != "None":
            return f"stopPolicy is {info.spec.spec.stop_policy} (Stopped)"
        return None
