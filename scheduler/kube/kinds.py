"""The Kubernetes kinds trainyard reads and writes, and where each one lives in the API.

One table, so every informer and every write builds its URL the same way: core kinds under
``/api/v1``, the rest under ``/apis/<group>/<version>``, namespaced ones under
``namespaces/<ns>/``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KubeKind:
    api_version: str  # "v1" or "group/version"
    kind: str
    plural: str
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path; ``namespace=None`` on a namespaced kind means all namespaces (list and watch only)."""
        base = f"/apis/{self.api_version}" if self.group else f"/api/{self.api_version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        elif not self.namespaced and namespace is not None:
            raise ValueError(f"{self.kind} is cluster-scoped; it takes no namespace (got {namespace!r})")
        path = f"{base}/{self.plural}"
        if name is not None:
            if self.namespaced and namespace is None:
                raise ValueError(f"{self.kind} {name!r} is namespaced; pass its namespace")
            path += f"/{name}"
            if subresource is not None:
                path += f"/{subresource}"
        return path

    def key(self, namespace: str | None, name: str) -> str:
        """``namespace/name`` for namespaced kinds, ``name`` otherwise."""
        return f"{namespace}/{name}" if self.namespaced else name


KUEUE = "kueue.x-k8s.io/v1beta2"
TRAINER = "trainer.kubeflow.org/v1alpha1"

KINDS: dict[str, KubeKind] = {
    k.kind: k
    for k in (
        KubeKind("v1", "Namespace", "namespaces", False),
        KubeKind("v1", "Node", "nodes", False),
        KubeKind("v1", "Pod", "pods", True),
        KubeKind("v1", "Event", "events", True),
        KubeKind("v1", "Secret", "secrets", True),
        KubeKind("v1", "ConfigMap", "configmaps", True),
        KubeKind("v1", "ServiceAccount", "serviceaccounts", True),
        KubeKind("coordination.k8s.io/v1", "Lease", "leases", True),
        KubeKind("batch/v1", "Job", "jobs", True),
        KubeKind(
            "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False
        ),
        KubeKind(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            False,
        ),
        KubeKind(KUEUE, "ResourceFlavor", "resourceflavors", False),
        KubeKind(KUEUE, "ClusterQueue", "clusterqueues", False),
        KubeKind(KUEUE, "LocalQueue", "localqueues", True),
        KubeKind(KUEUE, "Cohort", "cohorts", False),
        KubeKind(KUEUE, "Workload", "workloads", True),
        KubeKind(KUEUE, "WorkloadPriorityClass", "workloadpriorityclasses", False),
        KubeKind(KUEUE, "Topology", "topologies", False),
        KubeKind(KUEUE, "AdmissionCheck", "admissionchecks", False),
        KubeKind(TRAINER, "TrainJob", "trainjobs", True),
        KubeKind(TRAINER, "TrainingRuntime", "trainingruntimes", True),
        KubeKind(TRAINER, "ClusterTrainingRuntime", "clustertrainingruntimes", False),
        KubeKind("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", True),
        KubeKind("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups", True),
        KubeKind("kwok.x-k8s.io/v1alpha1", "Stage", "stages", False),
    )
}


def kind_named(kind: str | KubeKind) -> KubeKind:
    """The ``KubeKind`` for a kind name; a clear error for one trainyard does not know."""
    if isinstance(kind, KubeKind):
        return kind
    found = KINDS.get(kind)
    if found is None:
        raise ValueError(f"unknown kind {kind!r}; trainyard's Kubernetes adapter knows {', '.join(sorted(KINDS))}")
    return found
