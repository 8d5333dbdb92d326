"""What every job integration shares: Kueue's Workload naming, labels, pod sets and TAS requests.

Kueue's jobframework builds a job's Workload the same way for every kind: named
``<kind lower-cased>-<job name>-<hash5>`` (``GetWorkloadNameForOwnerWithGVK``), queued on the
job's ``kueue.x-k8s.io/queue-name`` label, prioritised by its ``kueue.x-k8s.io/priority-class``
label, one pod set per role with a topology request read from the pod template's TAS
annotations. The helpers here do exactly that; each kind's module says only what its roles are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from runtimes.errors import FieldError
from runtimes.k8s.core import PodTemplateSpec
from runtimes.podsets import topology_request as topology_request  # Kueue's reading, shared with TrainJobs
from scheduler.api.field_rules import errors_from_pydantic
from scheduler.api.kueue import (
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    PriorityClassRef,
    Workload,
)
from scheduler.trainjob import JOB_UID_LABEL, workload_name_for_owner

# Kubernetes' generateName suffix alphabet (apimachinery's utilrand: no vowels, no 0/1/3).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class JobError(Exception):
    """A job document from which no Workload can be derived: field errors, as the webhook words them."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))
        self.errors = errors


@dataclass
class JobDocument:
    """One job document as read from a file (plain data, as Kueue's integrations read the object)."""

    data: dict[str, Any]
    ordinal: int = 0  # its place among the inputs, for a stable stand-in for a generated name

    @property
    def metadata(self) -> dict[str, Any]:
        metadata = self.data.get("metadata")
        return metadata if isinstance(metadata, dict) else {}

    @property
    def spec(self) -> dict[str, Any]:
        spec = self.data.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def kind(self) -> str:
        return str(self.data.get("kind") or "")

    @property
    def group(self) -> str:
        api_version = str(self.data.get("apiVersion") or "")
        return api_version.rpartition("/")[0]

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "default")

    @property
    def name(self) -> str:
        """The job's name; for ``generateName`` the API server's random suffix, made stable here."""
        name = self.metadata.get("name")
        if name:
            return str(name)
        prefix = str(self.metadata.get("generateName") or f"{self.kind.lower()}-")
        digest = hashlib.sha1(f"{prefix}\n{self.ordinal}".encode(), usedforsecurity=False).digest()
        return prefix + "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])

    @property
    def labels(self) -> dict[str, str]:
        labels = self.metadata.get("labels")
        return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}

    @property
    def annotations(self) -> dict[str, str]:
        annotations = self.metadata.get("annotations")
        return {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {}

    @property
    def queue_name(self) -> str | None:
        return self.labels.get(QUEUE_NAME_LABEL) or None


def pod_template(value: Any, path: str) -> dict[str, Any]:
    """A pod template checked against the PodTemplateSpec schema. Errors name ``path`` (where the
    template is in the job); ``path`` is empty for a Pod, whose own metadata and spec are the template."""

    def at(field: str) -> str:
        return ".".join(part for part in (path, field) if part) or "spec"

    if not isinstance(value, dict):
        raise JobError([FieldError(path, "is required: the pod template of this role")])
    try:
        PodTemplateSpec.model_validate(value)
    except ValidationError as error:
        raise JobError([FieldError(at(e.path), e.message) for e in errors_from_pydantic(error)]) from None
    if not (value.get("spec") or {}).get("containers"):
        raise JobError([FieldError(at("spec.containers"), "must list at least one container")])
    return value


def pod_set(name: str, template: dict[str, Any], count: int, request: dict[str, Any] | None) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "template": template, "count": count}
    if request:
        found["topologyRequest"] = request
    return found


def replica_count(value: Any, path: str, default: int = 1) -> int:
    """An int32 count >= 0 (replicas, parallelism); ``default`` when absent."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
        raise JobError([FieldError(path, f"must be a whole number from 0 to 2147483647, got {value!r}")])
    return value


def build_workload(
    job: JobDocument,
    pod_sets: list[dict[str, Any]],
    *,
    name: str | None = None,
    annotations: dict[str, str] | None = None,
) -> Workload:
    """The Workload Kueue's jobframework creates for ``job`` (``NewWorkload``)."""
    if not pod_sets:
        raise JobError([FieldError("spec", f"a {job.kind} with no pods has nothing for Kueue to admit")])
    metadata: dict[str, Any] = {
        "name": name or workload_name_for_owner(job.name, str(job.metadata.get("uid") or ""), job.kind, job.group),
        "namespace": job.namespace,
        "labels": {JOB_UID_LABEL: str(job.metadata.get("uid") or "")},
        "creationTimestamp": job.metadata.get("creationTimestamp"),
    }
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {"podSets": pod_sets}
    if job.queue_name:
        spec["queueName"] = job.queue_name
    try:
        workload = Workload.model_validate({"metadata": metadata, "spec": spec})
    except ValidationError as error:
        raise JobError(errors_from_pydantic(error)) from None
    priority_class = job.labels.get(PRIORITY_CLASS_LABEL)
    if priority_class:
        workload.spec.priority_class_ref = PriorityClassRef.workload_priority_class(priority_class)
    return workload


@dataclass(frozen=True)
class JobIntegration:
    """One job kind Kueue integrates: its group, kinds, and how its Workload is derived."""

    name: str  # Kueue's integration name (``batch/job``, ``jobset.x-k8s.io/jobset``...)
    group: str
    kinds: tuple[str, ...]
    versions: tuple[str, ...]
    derive: Callable[[JobDocument], Workload]
    notes: tuple[str, ...] = field(default_factory=tuple)
