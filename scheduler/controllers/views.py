"""Typed, read-only views of the objects the controllers read most: Workload, TrainJob, JobSet.

The cache hands out the informers' own dicts (read-only by contract). Where one travels through
several functions it is wrapped once, where it is read, and those functions ask the view for what
they need by name (``workload.admission``, ``trainjob.suspended``) instead of each digging through
``(document.get("status") or {}).get(...)``. A view never copies nor changes its document: a write
builds its patch from ``view.document`` as before, so what reaches the API server is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.controllers.conditions import find_condition

_EMPTY: Mapping[str, Any] = {}


class ObjectView:
    """What every object has: metadata, status conditions, controlling owner."""

    __slots__ = ("document",)

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key})"

    @property
    def metadata(self) -> Mapping[str, Any]:
        return self.document.get("metadata") or _EMPTY

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str | None:
        namespace = self.metadata.get("namespace")
        return str(namespace) if namespace else None

    @property
    def key(self) -> str:
        """The reconcile key: "namespace/name", or "name" when cluster-scoped."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def uid(self) -> str | None:
        uid = self.metadata.get("uid")
        return str(uid) if uid else None

    @property
    def resource_version(self) -> str | None:
        version = self.metadata.get("resourceVersion")
        return str(version) if version else None

    @property
    def labels(self) -> Mapping[str, str]:
        return self.metadata.get("labels") or _EMPTY

    @property
    def annotations(self) -> Mapping[str, str]:
        return self.metadata.get("annotations") or _EMPTY

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.document.get("spec") or _EMPTY

    @property
    def status(self) -> Mapping[str, Any]:
        return self.document.get("status") or _EMPTY

    @property
    def conditions(self) -> Sequence[Mapping[str, Any]]:
        return self.status.get("conditions") or ()

    def condition(self, kind: str) -> Mapping[str, Any] | None:
        return find_condition(self.conditions, kind)

    def condition_true(self, kind: str) -> bool:
        condition = self.condition(kind)
        return condition is not None and condition.get("status") == "True"

    def controller_name(self, kind: str) -> str | None:
        """The name of the object of ``kind`` that controls this one (its controller ownerReference)."""
        for reference in self.metadata.get("ownerReferences") or ():
            if reference.get("kind") == kind and reference.get("controller"):
                return str(reference.get("name"))
        return None


class WorkloadView(ObjectView):
    """A kueue.x-k8s.io Workload: its queue, its admission and its checks."""

    __slots__ = ()

    @property
    def key(self) -> str:
        """ "namespace/name" as the engine keys Workloads (a Workload is always namespaced)."""
        return f"{self.namespace or 'default'}/{self.name}"

    @property
    def queue_name(self) -> str | None:
        name = self.spec.get("queueName")
        return str(name) if name else None

    @property
    def admission(self) -> Mapping[str, Any] | None:
        """``status.admission``, or None when the server shows none."""
        return self.status.get("admission") or None

    @property
    def cluster_queue(self) -> str | None:
        name = (self.admission or _EMPTY).get("clusterQueue")
        return str(name) if name else None

    @property
    def pod_set_assignments(self) -> Sequence[Mapping[str, Any]]:
        return (self.admission or _EMPTY).get("podSetAssignments") or ()

    @property
    def admitted_pods(self) -> int:
        """How many pods the admission counts, over all its pod sets."""
        return sum(int(assignment.get("count") or 0) for assignment in self.pod_set_assignments)

    @property
    def admission_checks(self) -> Sequence[Mapping[str, Any]]:
        """``status.admissionChecks``: each check's state (Kueue's ``AdmissionCheckState``)."""
        return self.status.get("admissionChecks") or ()

    @property
    def finished(self) -> bool:
        return self.condition_true("Finished")

    @property
    def quota_reserved(self) -> bool:
        """Quota is held: an admission, ``QuotaReserved``, and neither evicted nor finished."""
        return (
            self.admission is not None
            and self.condition_true("QuotaReserved")
            and not self.condition_true("Evicted")
            and not self.finished
        )

    @property
    def admission_committed(self) -> bool:
        """Admitted as the queue controller commits it: ``status.admission`` and ``Admitted=True``,
        and not being evicted (an eviction clears both, but never trust half of it)."""
        return self.admission is not None and self.condition_true("Admitted") and not self.condition_true("Evicted")

    @property
    def owner_trainjob(self) -> str | None:
        """The name of the TrainJob that controls it, if one does."""
        return self.controller_name("TrainJob")


class TrainJobView(ObjectView):
    """A trainer.kubeflow.org TrainJob, as the launcher reads it."""

    __slots__ = ()

    @property
    def suspended(self) -> bool:
        return bool(self.spec.get("suspend"))

    @property
    def managed_by(self) -> str | None:
        managed_by = self.spec.get("managedBy")
        return str(managed_by) if managed_by else None

    @property
    def finished(self) -> bool:
        """``Complete`` or ``Failed`` is True: Trainer's end of a TrainJob."""
        return self.condition_true("Complete") or self.condition_true("Failed")


class JobSetStatusView:
    """A JobSet's ``status`` (None: no JobSet yet): its conditions and replicated jobs' counts."""

    __slots__ = ("status",)

    def __init__(self, jobset: Mapping[str, Any] | None) -> None:
        self.status: Mapping[str, Any] = (jobset or _EMPTY).get("status") or _EMPTY

    @property
    def conditions(self) -> Sequence[Mapping[str, Any]]:
        return self.status.get("conditions") or ()

    def true_conditions(self) -> list[Mapping[str, Any]]:
        return [condition for condition in self.conditions if condition.get("status") == "True"]

    @property
    def replicated_jobs(self) -> Sequence[Mapping[str, Any]]:
        """``replicatedJobsStatus``: per replicated job, its name and its jobs' counts."""
        return self.status.get("replicatedJobsStatus") or ()
