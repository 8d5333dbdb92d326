"""Admission checks as Kueue runs them: which apply, whether they are active, and what they leave.

A ClusterQueue names AdmissionChecks (``spec.admissionChecksStrategy.admissionChecks``, each
optionally ``onFlavors``; v1beta1's ``spec.admissionChecks`` apply to every flavor). A Workload
whose quota the engine reserves is *QuotaReserved*; it is *Admitted* only when every check that
applies to the flavors it was given is Ready (Kueue's ``workload.AdmissionChecksForWorkload``).
A ClusterQueue whose check is missing or inactive admits nothing (Kueue's
``clusterqueue.inactiveReason``: AdmissionCheckNotFound, AdmissionCheckInactive,
MultipleMultiKueueAdmissionChecks, MultiKueueAdmissionCheckAppliedPerFlavor,
MultiKueueWithProvisioningRequest).

Whether a check is active is what its controller would say from the objects at hand: Kueue's
provisioning controller wants ``parameters`` naming an existing ProvisioningRequestConfig
(BadParametersRef otherwise); the MultiKueue controller an existing MultiKueueConfig with at least
one MultiKueueCluster that exists and is not marked inactive (a dry run cannot connect, so a given
cluster counts as reachable). A check of any other controller is active only if its
``status.conditions`` say ``Active: True``: no controller of trainyard's runs it. A given
``Active`` condition always wins. Pure: objects in, verdicts out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runtimes.k8s.meta import Condition, Resource
from scheduler.api.kueue import (
    KUEUE_GROUP,
    MULTIKUEUE_CONTROLLER,
    PROVISIONING_REQUEST_CONTROLLER,
    AdmissionCheck,
    AdmissionCheckState,
    ClusterQueue,
    MultiKueueCluster,
    MultiKueueConfig,
    ProvisioningRequestConfig,
)
from scheduler.engine.workloads import WorkloadInfo, WorkloadState

ADMISSION_CHECK_KINDS = ("AdmissionCheck", "ProvisioningRequestConfig", "MultiKueueConfig", "MultiKueueCluster")


def _condition(conditions: Iterable[Condition], kind: str) -> Condition | None:
    return next((c for c in conditions if c.type == kind), None)


@dataclass
class AdmissionCheckRegistry:
    """The AdmissionChecks and their parameter objects the engine was given, by name."""

    checks: dict[str, AdmissionCheck] = field(default_factory=dict)
    provisioning_configs: dict[str, ProvisioningRequestConfig] = field(default_factory=dict)
    multikueue_configs: dict[str, MultiKueueConfig] = field(default_factory=dict)
    multikueue_clusters: dict[str, MultiKueueCluster] = field(default_factory=dict)

    def apply(self, obj: Resource) -> bool:
        """Take ``obj`` if it is one of the four kinds; False for any other object."""
        table = self.table(obj.kind) if isinstance(obj, _KINDS) else None
        if table is None:
            return False
        table[obj.name] = obj
        return True

    def table(self, kind: str) -> dict[str, Resource] | None:
        tables: dict[str, dict[str, Resource]] = {
            "AdmissionCheck": self.checks,  # type: ignore[dict-item]
            "ProvisioningRequestConfig": self.provisioning_configs,  # type: ignore[dict-item]
            "MultiKueueConfig": self.multikueue_configs,  # type: ignore[dict-item]
            "MultiKueueCluster": self.multikueue_clusters,  # type: ignore[dict-item]
        }
        return tables.get(kind)

    def delete(self, kind: str, name: str) -> bool:
        table = self.table(kind)
        if table is None:
            return False
        table.pop(name, None)
        return True

    # ---------------------------------------------------------------------------------- activity

    def inactive_reason(self, check: AdmissionCheck) -> str | None:
        """Why ``check`` is not active (Kueue's controller reason and message), or None."""
        given = _condition(check.status.conditions, "Active")
        if given is not None:
            if given.status == "True":
                return None
            return f"{given.reason or 'Inactive'}: {given.message or 'the Active condition is False'}"
        controller = check.spec.controller_name
        parameters = check.spec.parameters
        if controller == PROVISIONING_REQUEST_CONTROLLER:
            if (
                parameters is None
                or parameters.api_group != KUEUE_GROUP
                or parameters.kind != "ProvisioningRequestConfig"
                or not parameters.name
            ):
                return "BadParametersRef: spec.parameters must name a kueue.x-k8s.io ProvisioningRequestConfig"
            if parameters.name not in self.provisioning_configs:
                return f"BadParametersRef: ProvisioningRequestConfig {parameters.name!r} not found"
            return None
        if controller == MULTIKUEUE_CONTROLLER:
            if parameters is None or parameters.api_group != KUEUE_GROUP or parameters.kind != "MultiKueueConfig":
                return "BadConfig: spec.parameters must name a kueue.x-k8s.io MultiKueueConfig"
            config = self.multikueue_configs.get(parameters.name)
            if config is None:
                return f"BadConfig: MultiKueueConfig {parameters.name!r} not found"
            usable = [name for name in config.spec.clusters if self._cluster_usable(name)]
            if not usable:
                listed = ", ".join(config.spec.clusters) or "none"
                return f"NoUsableClusters: no MultiKueueCluster of {parameters.name!r} exists and is active ({listed})"
            return None
        return (
            f"no controller runs {controller!r} here (trainyard runs Kueue's provisioning-request and "
            "multikueue checks only); give the check's status.conditions Active=True to treat it as active"
        )

    def _cluster_usable(self, name: str) -> bool:
        cluster = self.multikueue_clusters.get(name)
        if cluster is None:
            return False
        active = _condition(cluster.status.conditions, "Active")
        return active is None or active.status == "True"


_KINDS = (AdmissionCheck, ProvisioningRequestConfig, MultiKueueConfig, MultiKueueCluster)


def cluster_queue_flavors(cluster_queue: ClusterQueue) -> list[str]:
    return [flavor.name for group in cluster_queue.spec.resource_groups for flavor in group.flavors]


def checks_of(cluster_queue: ClusterQueue) -> dict[str, frozenset[str]]:
    """Each check of the ClusterQueue and the flavors it runs for (all of the queue's when not
    narrowed), as Kueue's ``admissioncheck.NewAdmissionChecks`` builds them."""
    every = frozenset(cluster_queue_flavors(cluster_queue))
    found: dict[str, frozenset[str]] = {}
    strategy = cluster_queue.spec.admission_checks_strategy
    for rule in strategy.admission_checks if strategy is not None else []:
        found[rule.name] = frozenset(rule.on_flavors) or every
    for name in cluster_queue.spec.admission_checks or []:
        found.setdefault(name, every)
    return found


def cluster_queue_inactive_reason(cluster_queue: ClusterQueue, registry: AdmissionCheckRegistry) -> str | None:
    """Why the ClusterQueue admits nothing because of its admission checks (Kueue's reason and
    message), or None."""
    checks = checks_of(cluster_queue)
    if not checks:
        return None
    every = frozenset(cluster_queue_flavors(cluster_queue))
    missing, inactive, multikueue, per_flavor, provisioning = [], [], [], [], []
    for name, flavors in sorted(checks.items()):
        check = registry.checks.get(name)
        if check is None:
            missing.append(name)
            continue
        why = registry.inactive_reason(check)
        if why is not None:
            inactive.append(f"{name} ({why})")
        if check.spec.controller_name == PROVISIONING_REQUEST_CONTROLLER:
            provisioning.append(name)
        if check.spec.controller_name == MULTIKUEUE_CONTROLLER:
            multikueue.append(name)
            if flavors != every:
                per_flavor.append(name)
    if missing:
        return f"references missing AdmissionCheck(s): {', '.join(missing)} (AdmissionCheckNotFound)"
    if inactive:
        return f"references inactive AdmissionCheck(s): {', '.join(inactive)} (AdmissionCheckInactive)"
    if len(multikueue) > 1:
        return (
            "cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: "
            f"{', '.join(multikueue)} (MultipleMultiKueueAdmissionChecks)"
        )
    if per_flavor:
        return (
            f"cannot specify MultiKueue AdmissionCheck per flavor, found: {', '.join(per_flavor)} "
            "(MultiKueueAdmissionCheckAppliedPerFlavor)"
        )
    if multikueue and provisioning:
        return (
            "cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, found: "
            f"{', '.join(multikueue)}, {', '.join(provisioning)} (MultiKueueWithProvisioningRequest)"
        )
    return None


def checks_for_workload(cluster_queue: ClusterQueue, assigned_flavors: Iterable[str]) -> list[str]:
    """The checks a workload admitted with ``assigned_flavors`` must pass, sorted by name."""
    assigned = set(assigned_flavors)
    return sorted(name for name, flavors in checks_of(cluster_queue).items() if flavors & assigned)


@dataclass(frozen=True)
class CheckVerdict:
    """Where a workload whose quota is reserved stands with its admission checks."""

    state: str  # "Admitted" | "QuotaReserved" | "Rejected"
    checks: list[AdmissionCheckState]

    @property
    def waiting_reason(self) -> str:
        waiting = [
            f"{c.name} ({c.state}{': ' + c.message if c.message else ''})" for c in self.checks if c.state != "Ready"
        ]
        if self.state == "Rejected":
            rejected = [c.name for c in self.checks if c.state == "Rejected"]
            return (
                f"AdmissionCheck {', '.join(rejected)} rejected the workload: it is deactivated ({'; '.join(waiting)})"
            )
        if self.state == "QuotaReserved":
            return f"quota reserved; waiting for admission checks: {'; '.join(waiting)}"
        return ""


def verdict(required: list[str], given: Mapping[str, AdmissionCheckState]) -> CheckVerdict:
    """Admitted when every required check is Ready, Rejected when one is Rejected, else QuotaReserved.

    A check with no state given is Pending (its controller has not answered). Retry counts as not
    Ready: Kueue releases the quota and starts the checks again, which ends at QuotaReserved here.
    """
    states = [given.get(name) or AdmissionCheckState(name=name, state="Pending") for name in required]
    if any(s.state == "Rejected" for s in states):
        return CheckVerdict("Rejected", states)
    if all(s.state == "Ready" for s in states):
        return CheckVerdict("Admitted", states)
    return CheckVerdict("QuotaReserved", states)


def quota_reserved_verdicts(
    workloads: Iterable[WorkloadInfo],
    cluster_queues: Mapping[str, ClusterQueue],
    given: Mapping[str, Mapping[str, AdmissionCheckState]],
) -> dict[str, CheckVerdict]:
    """For each workload whose quota the engine reserved, where it stands with the checks of its
    ClusterQueue for the flavors it was given (``given``: the states its status carried, by key)."""
    verdicts: dict[str, CheckVerdict] = {}
    for workload in workloads:
        admission = workload.admission
        if workload.state is not WorkloadState.ADMITTED or admission is None:
            continue
        cluster_queue = cluster_queues.get(admission.cluster_queue)
        if cluster_queue is None:
            continue
        required = checks_for_workload(cluster_queue, admission.flavors.values())
        verdicts[workload.key] = verdict(required, given.get(workload.key, {}))
    return verdicts
