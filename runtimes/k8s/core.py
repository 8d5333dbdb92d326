"""core/v1 shapes trainyard reads: pod templates (requests, selectors, tolerations) and Nodes.

Only the fields the scheduler and the renderer use are typed; everything else is kept as an
extra field so manifests round-trip unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from runtimes.k8s.meta import KubeModel, ObjectMeta, Resource
from runtimes.k8s.quantity import Quantity


class ResourceRequirements(KubeModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)


class EnvVar(KubeModel):
    name: str
    value: str | None = None
    value_from: dict[str, Any] | None = None


class ContainerPort(KubeModel):
    container_port: int
    name: str | None = None
    protocol: str | None = None


class VolumeMount(KubeModel):
    name: str
    mount_path: str
    read_only: bool | None = None
    sub_path: str | None = None


class Container(KubeModel):
    name: str
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] | None = None
    ports: list[ContainerPort] | None = None
    resources: ResourceRequirements | None = None
    volume_mounts: list[VolumeMount] | None = None
    working_dir: str | None = None


class Toleration(KubeModel):
    key: str | None = None
    operator: str | None = None  # Equal (default) | Exists
    value: str | None = None
    effect: str | None = None  # NoSchedule | PreferNoSchedule | NoExecute; empty = all
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' Toleration.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if (self.operator or "Equal") == "Exists":
            return True
        if not self.key:
            # An empty key is only valid with Exists (matches every taint).
            return False
        return (self.value or "") == (taint.value or "")


class Taint(KubeModel):
    key: str
    value: str | None = None
    effect: str
    time_added: str | None = None


def tolerates_all(tolerations: list[Toleration], taints: list[Taint], effects: frozenset[str]) -> bool:
    """True when every taint whose effect is in ``effects`` is tolerated."""
    return all(any(t.tolerates(taint) for t in tolerations) for taint in taints if taint.effect in effects)


SCHEDULING_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


class NodeSelectorRequirement(KubeModel):
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: list[str] = Field(default_factory=list)

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        match self.operator:
            case "In":
                return present and value in self.values
            case "NotIn":
                return not present or value not in self.values
            case "Exists":
                return present
            case "DoesNotExist":
                return not present
            case "Gt" | "Lt":
                if not present or not self.values:
                    return False
                try:
                    have, bound = int(value or ""), int(self.values[0])
                except ValueError:
                    return False
                return have > bound if self.operator == "Gt" else have < bound
        return False


class NodeSelectorTerm(KubeModel):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(KubeModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class NodeAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[dict[str, Any]] | None = None


class Affinity(KubeModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: dict[str, Any] | None = None
    pod_anti_affinity: dict[str, Any] | None = None


class PodSpec(KubeModel):
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    restart_policy: str | None = None
    overhead: dict[str, Quantity] | None = None
    priority_class_name: str | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    volumes: list[dict[str, Any]] | None = None
    subdomain: str | None = None
    hostname: str | None = None
    service_account_name: str | None = None


class PodTemplateSpec(KubeModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


def pod_requests(spec: PodSpec) -> dict[str, Quantity]:
    """Effective per-pod requests, as the kube-scheduler computes them.

    max(sum of app containers, largest init container) per resource, plus pod overhead.
    A limit without a request counts as the request (Kubernetes defaults requests to limits).
    """
    from fractions import Fraction

    def container_requests(container: Container) -> dict[str, Fraction]:
        resources = container.resources or ResourceRequirements()
        merged = {name: q.value for name, q in resources.limits.items()}
        merged.update({name: q.value for name, q in resources.requests.items()})
        return merged

    total: dict[str, Fraction] = {}
    for container in spec.containers:
        for name, value in container_requests(container).items():
            total[name] = total.get(name, Fraction(0)) + value
    for container in spec.init_containers or []:
        for name, value in container_requests(container).items():
            total[name] = max(total.get(name, Fraction(0)), value)
    for name, quantity in (spec.overhead or {}).items():
        total[name] = total.get(name, Fraction(0)) + quantity.value
    return {name: Quantity(_fraction_text(value)) for name, value in total.items() if value != 0}


def _fraction_text(value: Any) -> str:
    """Exact text for a rational quantity (milli precision is what Kubernetes keeps)."""
    milli = value * 1000
    if milli.denominator == 1:
        as_int = int(milli)
        return str(as_int // 1000) if as_int % 1000 == 0 else f"{as_int}m"
    nano = value * 10**9
    return f"{-(-nano.numerator // nano.denominator)}n"


class NodeCondition(KubeModel):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    last_heartbeat_time: str | None = None


class NodeSpec(KubeModel):
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool = False
    provider_id: str | None = Field(default=None, alias="providerID")
    pod_cidr: str | None = Field(default=None, alias="podCIDR")


class NodeStatus(KubeModel):
    allocatable: dict[str, Quantity] = Field(default_factory=dict)
    capacity: dict[str, Quantity] = Field(default_factory=dict)
    conditions: list[NodeCondition] = Field(default_factory=list)


class Node(Resource):
    api_version: str = "v1"
    kind: str = "Node"
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def ready(self) -> bool:
        """A node with no Ready condition at all is treated as Ready (KWOK and test fixtures)."""
        for condition in self.status.conditions:
            if condition.type == "Ready":
                return condition.status == "True"
        return True

    @property
    def schedulable(self) -> bool:
        return self.ready and not self.spec.unschedulable


__all__ = [
    "SCHEDULING_TAINT_EFFECTS",
    "Affinity",
    "Container",
    "EnvVar",
    "Node",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "PodSpec",
    "PodTemplateSpec",
    "ResourceRequirements",
    "Taint",
    "Toleration",
    "pod_requests",
    "tolerates_all",
]
