"""Kueue objects, kueue.x-k8s.io/v1beta2 with v1beta1 input accepted.

Field names, enums and defaults follow Kueue's ``apis/kueue/v1beta2`` types. v1beta1 spellings
(``spec.cohort``, ``spec.admissionChecks``, Workload ``priorityClassName``) are read through
validation aliases and written back in their v1beta2 form; ``deprecated_fields`` lists them so
the webhook can warn.

The admission-check objects live in ``kueue_admission_checks``, the warnings in
``kueue_deprecations`` and the group/version strings in ``kueue_versions``; all are re-exported
here, so ``from scheduler.api.kueue import X`` names every Kueue model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field

# The job-side labels and annotations, re-exported: one spelling shared with the renderer.
from runtimes.api.kueue_labels import PODSET_GROUP_NAME as PODSET_GROUP_NAME
from runtimes.api.kueue_labels import PODSET_PREFERRED_TOPOLOGY as PODSET_PREFERRED_TOPOLOGY
from runtimes.api.kueue_labels import PODSET_REQUIRED_TOPOLOGY as PODSET_REQUIRED_TOPOLOGY
from runtimes.api.kueue_labels import PODSET_SLICE_REQUIRED_TOPOLOGY as PODSET_SLICE_REQUIRED_TOPOLOGY
from runtimes.api.kueue_labels import PODSET_SLICE_SIZE as PODSET_SLICE_SIZE
from runtimes.api.kueue_labels import PODSET_UNCONSTRAINED_TOPOLOGY as PODSET_UNCONSTRAINED_TOPOLOGY
from runtimes.api.kueue_labels import PRIORITY_CLASS_LABEL as PRIORITY_CLASS_LABEL
from runtimes.api.kueue_labels import QUEUE_NAME_LABEL as QUEUE_NAME_LABEL
from runtimes.k8s.core import PodTemplateSpec, Taint, Toleration
from runtimes.k8s.meta import Condition, KubeModel, LabelSelector, Resource
from runtimes.k8s.quantity import Quantity
from scheduler.api.kueue_admission_checks import MULTIKUEUE_CONTROLLER as MULTIKUEUE_CONTROLLER
from scheduler.api.kueue_admission_checks import PROVISIONING_REQUEST_CONTROLLER as PROVISIONING_REQUEST_CONTROLLER
from scheduler.api.kueue_admission_checks import AdmissionCheck as AdmissionCheck
from scheduler.api.kueue_admission_checks import (
    AdmissionCheckParametersReference as AdmissionCheckParametersReference,
)
from scheduler.api.kueue_admission_checks import AdmissionCheckSpec as AdmissionCheckSpec
from scheduler.api.kueue_admission_checks import AdmissionCheckStatus as AdmissionCheckStatus
from scheduler.api.kueue_admission_checks import MultiKueueCluster as MultiKueueCluster
from scheduler.api.kueue_admission_checks import MultiKueueClusterSpec as MultiKueueClusterSpec
from scheduler.api.kueue_admission_checks import MultiKueueConfig as MultiKueueConfig
from scheduler.api.kueue_admission_checks import MultiKueueConfigSpec as MultiKueueConfigSpec
from scheduler.api.kueue_admission_checks import ProvisioningRequestConfig as ProvisioningRequestConfig
from scheduler.api.kueue_admission_checks import ProvisioningRequestConfigSpec as ProvisioningRequestConfigSpec
from scheduler.api.kueue_deprecations import deprecated_fields as deprecated_fields
from scheduler.api.kueue_deprecations import no_effect_fields as no_effect_fields
from scheduler.api.kueue_versions import KUEUE_API_VERSIONS as KUEUE_API_VERSIONS
from scheduler.api.kueue_versions import KUEUE_GROUP as KUEUE_GROUP
from scheduler.api.kueue_versions import KUEUE_V1BETA1 as KUEUE_V1BETA1
from scheduler.api.kueue_versions import KUEUE_V1BETA2 as KUEUE_V1BETA2

DEFAULT_LOCAL_QUEUE_NAME = "default"


# ----------------------------------------------------------------------------------- ResourceFlavor


class ResourceFlavorSpec(KubeModel):
    node_labels: dict[str, str] = Field(default_factory=dict)
    node_taints: list[Taint] = Field(default_factory=list)
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_name: str | None = None


class ResourceFlavor(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "ResourceFlavor"
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


# -------------------------------------------------------------------------------- quota structures


class ResourceQuota(KubeModel):
    name: str
    nominal_quota: Quantity = Field(default_factory=lambda: Quantity(0))
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(KubeModel):
    name: str
    resources: list[ResourceQuota] = Field(default_factory=list)


class ResourceGroup(KubeModel):
    covered_resources: list[str] = Field(default_factory=list)
    flavors: list[FlavorQuotas] = Field(default_factory=list)


class FairSharing(KubeModel):
    weight: Quantity | None = None

    def weight_value(self) -> float:
        return float(self.weight.value) if self.weight is not None else 1.0


# ---------------------------------------------------------------------------------- ClusterQueue

QueueingStrategy = Literal["StrictFIFO", "BestEffortFIFO"]
StopPolicy = Literal["None", "Hold", "HoldAndDrain"]
WithinClusterQueuePolicy = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
ReclaimWithinCohortPolicy = Literal["Never", "LowerPriority", "Any"]
BorrowWithinCohortPolicyName = Literal["Never", "LowerPriority"]
FungibilityPolicy = Literal["MayStopSearch", "TryNextFlavor", "Borrow", "Preempt"]
FungibilityPreference = Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"]


class BorrowWithinCohort(KubeModel):
    policy: BorrowWithinCohortPolicyName = "Never"
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(KubeModel):
    within_cluster_queue: WithinClusterQueuePolicy = "Never"
    reclaim_within_cohort: ReclaimWithinCohortPolicy = "Never"
    borrow_within_cohort: BorrowWithinCohort | None = None


class FlavorFungibility(KubeModel):
    # v1beta1 spelled these Borrow / Preempt; they mean MayStopSearch.
    when_can_borrow: FungibilityPolicy = "MayStopSearch"
    when_can_preempt: FungibilityPolicy = "TryNextFlavor"
    preference: FungibilityPreference | None = None

    @property
    def try_next_when_borrowing(self) -> bool:
        return self.when_can_borrow == "TryNextFlavor"

    @property
    def try_next_when_preempting(self) -> bool:
        return self.when_can_preempt == "TryNextFlavor"


class AdmissionCheckStrategyRule(KubeModel):
    name: str
    on_flavors: list[str] = Field(default_factory=list)


class AdmissionChecksStrategy(KubeModel):
    admission_checks: list[AdmissionCheckStrategyRule] = Field(default_factory=list)


class ClusterQueueSpec(KubeModel):
    resource_groups: list[ResourceGroup] = Field(default_factory=list)
    cohort_name: str | None = Field(default=None, validation_alias=AliasChoices("cohortName", "cohort"))
    queueing_strategy: QueueingStrategy = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility = Field(default_factory=FlavorFungibility)
    preemption: ClusterQueuePreemption = Field(default_factory=ClusterQueuePreemption)
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    admission_checks: list[str] | None = None  # v1beta1 only
    stop_policy: StopPolicy = "None"
    fair_sharing: FairSharing | None = None
    # Kept as given; the admission engine does not act on them (``admit`` says so per object).
    admission_scope: dict[str, Any] | None = None
    concurrent_admission_policy: dict[str, Any] | None = None


class ClusterQueue(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "ClusterQueue"
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    status: dict[str, Any] | None = None


# -------------------------------------------------------------------------------- LocalQueue, Cohort


class LocalQueueSpec(KubeModel):
    cluster_queue: str = ""
    stop_policy: StopPolicy = "None"
    fair_sharing: FairSharing | None = None


class LocalQueue(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "LocalQueue"
    spec: LocalQueueSpec = Field(default_factory=LocalQueueSpec)
    status: dict[str, Any] | None = None


class CohortSpec(KubeModel):
    parent_name: str | None = Field(default=None, validation_alias=AliasChoices("parentName", "parent"))
    resource_groups: list[ResourceGroup] = Field(default_factory=list)
    fair_sharing: FairSharing | None = None


class Cohort(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "Cohort"
    spec: CohortSpec = Field(default_factory=CohortSpec)
    status: dict[str, Any] | None = None


class WorkloadPriorityClass(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "WorkloadPriorityClass"
    value: int = 0
    description: str | None = None


class TopologyLevel(KubeModel):
    node_label: str


class TopologySpec(KubeModel):
    levels: list[TopologyLevel] = Field(default_factory=list)


class Topology(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "Topology"
    spec: TopologySpec = Field(default_factory=TopologySpec)

    @property
    def level_labels(self) -> list[str]:
        return [level.node_label for level in self.spec.levels]


# ------------------------------------------------------------------------------------------ Workload


class PodSetTopologyRequest(KubeModel):
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool | None = None
    pod_index_label: str | None = None
    sub_group_index_label: str | None = None
    sub_group_count: int | None = None
    pod_set_group_name: str | None = None
    pod_set_slice_required_topology: str | None = None
    pod_set_slice_size: int | None = None


class PodSet(KubeModel):
    name: str = "main"
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    count: int = 1
    min_count: int | None = None
    topology_request: PodSetTopologyRequest | None = None


class PriorityClassRef(KubeModel):
    group: str = KUEUE_GROUP
    kind: str = "WorkloadPriorityClass"
    name: str

    @classmethod
    def workload_priority_class(cls, name: str) -> PriorityClassRef:
        """A reference to a WorkloadPriorityClass, group and kind written out: Kueue's CRD requires them."""
        return cls(group=KUEUE_GROUP, kind="WorkloadPriorityClass", name=name)


class WorkloadSpec(KubeModel):
    pod_sets: list[PodSet] = Field(default_factory=list)
    queue_name: str | None = None
    priority_class_ref: PriorityClassRef | None = None
    priority_class_name: str | None = None  # v1beta1
    priority_class_source: str | None = None  # v1beta1
    priority: int | None = None
    active: bool = True
    maximum_execution_time_seconds: int | None = None


class TopologyDomainAssignment(KubeModel):
    values: list[str] = Field(default_factory=list)
    count: int = 0


class TopologyAssignment(KubeModel):
    levels: list[str] = Field(default_factory=list)
    domains: list[TopologyDomainAssignment] = Field(default_factory=list)


class PodSetAssignment(KubeModel):
    name: str = "main"
    flavors: dict[str, str] = Field(default_factory=dict)
    resource_usage: dict[str, Quantity] = Field(default_factory=dict)
    count: int | None = None
    topology_assignment: TopologyAssignment | None = None


class Admission(KubeModel):
    cluster_queue: str
    pod_set_assignments: list[PodSetAssignment] = Field(default_factory=list)


class RequeueState(KubeModel):
    count: int | None = None
    requeue_at: str | None = None


AdmissionCheckStateName = Literal["Pending", "Ready", "Retry", "Rejected"]


class AdmissionCheckState(KubeModel):
    """One entry of a Workload's ``status.admissionChecks``: what the check's controller said."""

    name: str
    state: AdmissionCheckStateName = "Pending"
    message: str = ""
    last_transition_time: str | None = None


class WorkloadStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=list)
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    admission_checks: list[AdmissionCheckState] = Field(default_factory=list)

    def condition(self, kind: str) -> Condition | None:
        for condition in self.conditions:  # a loop, not next(genexpr): asked of every workload submitted
            if condition.type == kind:
                return condition
        return None

    def is_true(self, kind: str) -> bool:
        condition = self.condition(kind)
        return condition is not None and condition.status == "True"


class Workload(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "Workload"
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)

    @property
    def priority_class_name(self) -> str | None:
        if self.spec.priority_class_ref is not None:
            return self.spec.priority_class_ref.name
        return self.spec.priority_class_name


KUEUE_KINDS: dict[str, type[Resource]] = {
    "ResourceFlavor": ResourceFlavor,
    "ClusterQueue": ClusterQueue,
    "LocalQueue": LocalQueue,
    "Cohort": Cohort,
    "WorkloadPriorityClass": WorkloadPriorityClass,
    "Topology": Topology,
    "Workload": Workload,
    "AdmissionCheck": AdmissionCheck,
    "ProvisioningRequestConfig": ProvisioningRequestConfig,
    "MultiKueueConfig": MultiKueueConfig,
    "MultiKueueCluster": MultiKueueCluster,
}
