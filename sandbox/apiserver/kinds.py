"""The resource types the fake API server serves, as discovery describes them.

Each type says what the real API server's registry would: its group/version, plural, scope,
whether it has a ``/status`` subresource, and what happens to ``status`` on create (custom
resources with a status subresource drop it; a Pod starts ``Pending``; a Node keeps what it is
given, as KWOK node manifests rely on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

StatusOnCreate = Literal["drop", "keep", "pending-pod", "active-namespace"]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool
    status_subresource: bool = True
    status_on_create: StatusOnCreate = "drop"
    custom: bool = True  # a CustomResourceDefinition (strategic merge patch refused, as the real server does)
    field_selectors: tuple[str, ...] = field(default=())
    # metadata.generation kept (custom resources, Pods, Jobs, webhook configurations; not ConfigMaps...)
    generation: bool = True
    # a PUT without metadata.resourceVersion allowed (the registry's AllowUnconditionalUpdate)
    unconditional_update: bool | None = None  # None: as the kind's origin (built-ins yes, custom no)
    # a delete answers with the object instead of a Status (the registry's ReturnDeletedObject)
    returns_deleted: bool = False
    # kube-apiserver serves its watches from a watch cache (every kind but Events, by default)
    watch_cache: bool = True

    @property
    def allows_unconditional_update(self) -> bool:
        return not self.custom if self.unconditional_update is None else self.unconditional_update

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> tuple[str, str]:
        return self.group, self.version

    @property
    def qualified_plural(self) -> str:
        """``plural.group`` as the real server names a resource in its error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _core(
    kind: str,
    plural: str,
    namespaced: bool,
    *,
    status_subresource: bool = True,
    status_on_create: StatusOnCreate = "drop",
    field_selectors: tuple[str, ...] = (),
    generation: bool = False,
    returns_deleted: bool = False,
    watch_cache: bool = True,
) -> ResourceType:
    return ResourceType(
        "",
        "v1",
        kind,
        plural,
        namespaced,
        status_subresource=status_subresource,
        status_on_create=status_on_create,
        custom=False,
        field_selectors=field_selectors,
        generation=generation,
        returns_deleted=returns_deleted,
        watch_cache=watch_cache,
    )


KUEUE = "kueue.x-k8s.io"
TRAINER = "trainer.kubeflow.org"

RESOURCE_TYPES: tuple[ResourceType, ...] = (
    _core("Namespace", "namespaces", False, status_on_create="active-namespace", returns_deleted=True),
    _core("Node", "nodes", False, status_on_create="keep", field_selectors=("spec.unschedulable",)),
    _core(
        "Pod",
        "pods",
        True,
        status_on_create="pending-pod",
        field_selectors=("spec.nodeName", "spec.schedulerName", "status.phase"),
        generation=True,
        returns_deleted=True,
    ),
    _core(
        "Event",
        "events",
        True,
        status_subresource=False,
        watch_cache=False,
        field_selectors=(
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ),
    ),
    _core("Secret", "secrets", True, status_subresource=False, status_on_create="keep", field_selectors=("type",)),
    _core("ConfigMap", "configmaps", True, status_subresource=False, status_on_create="keep"),
    _core(
        "ServiceAccount",
        "serviceaccounts",
        True,
        status_subresource=False,
        status_on_create="keep",
        returns_deleted=True,
    ),
    ResourceType(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        True,
        status_subresource=False,
        custom=False,
        generation=False,
        unconditional_update=False,
    ),
    ResourceType("batch", "v1", "Job", "jobs", True, custom=False, field_selectors=("status.successful",)),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
        status_subresource=False,
        status_on_create="keep",
        custom=False,
        unconditional_update=False,
    ),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
        status_subresource=False,
        status_on_create="keep",
        custom=False,
        unconditional_update=False,
    ),
    ResourceType(KUEUE, "v1beta2", "ResourceFlavor", "resourceflavors", False, status_subresource=False),
    ResourceType(KUEUE, "v1beta2", "ClusterQueue", "clusterqueues", False),
    ResourceType(KUEUE, "v1beta2", "LocalQueue", "localqueues", True),
    ResourceType(KUEUE, "v1beta2", "Cohort", "cohorts", False),
    ResourceType(KUEUE, "v1beta2", "Workload", "workloads", True),
    ResourceType(KUEUE, "v1beta2", "WorkloadPriorityClass", "workloadpriorityclasses", False, status_subresource=False),
    ResourceType(KUEUE, "v1beta2", "Topology", "topologies", False, status_subresource=False),
    ResourceType(KUEUE, "v1beta2", "AdmissionCheck", "admissionchecks", False),
    ResourceType(TRAINER, "v1alpha1", "TrainJob", "trainjobs", True),
    ResourceType(TRAINER, "v1alpha1", "TrainingRuntime", "trainingruntimes", True, status_subresource=False),
    ResourceType(
        TRAINER, "v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes", False, status_subresource=False
    ),
    ResourceType("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", True),
    ResourceType("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups", True),
    ResourceType("kwok.x-k8s.io", "v1alpha1", "Stage", "stages", False, status_subresource=False),
)


class Registry:
    """Lookups over a set of resource types: by URL parts, by kind, by group."""

    def __init__(self, types: tuple[ResourceType, ...] = RESOURCE_TYPES) -> None:
        self.types = types
        self._by_path = {(t.group, t.version, t.plural): t for t in types}
        self._by_kind = {(t.api_version, t.kind): t for t in types}

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return self._by_kind.get((api_version, kind))

    def groups(self) -> dict[str, list[str]]:
        """Group name -> its versions, for every named group (not the core group)."""
        found: dict[str, list[str]] = {}
        for t in self.types:
            if t.group and t.version not in found.setdefault(t.group, []):
                found[t.group].append(t.version)
        return found

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self.types if t.group_version == (group, version)]
