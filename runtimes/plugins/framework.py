"""The runtime plugin framework: Trainer's extension points as small protocols.

One object, :class:`RuntimeInfo`, carries everything about one render from phase to phase (as
Trainer's ``runtime.Info`` and the scheduler framework's ``CycleState`` do): the runtime's ML and
pod-group policies, the JobSet template being built (a Kubernetes dict), one :class:`PodSetInfo`
per replicated job, and the labels the pod-group policy wants on every pod.

Phases, in the order :mod:`runtimes.plugins.pipeline` runs them:

1. ``CustomValidationPlugin.validate``     — webhook-time checks of a TrainJob against its runtime
2. ``MLPolicyPlugin.enforce_ml_policy``    — torch / mpi / jax / xgboost / plainml: counts, env, volumes
3. ``PodGroupPolicyPlugin.enforce_pod_group_policy`` — coscheduling / volcano: pod labels, annotations
4. ``PreBuildPlugin.pre_build``            — sync pod-set counts and the network into the template
5. ``ComponentBuilderPlugin.build``        — emit Kubernetes objects (JobSet, PodGroup, Secret, ...)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from runtimes.api.trainer import (
    ANCESTOR_TRAINER,
    LAUNCHER,
    NODE,
    AnyTrainingRuntime,
    MLPolicy,
    PodGroupPolicy,
    TrainJob,
)
from runtimes.errors import FieldError


@dataclass
class PodSetInfo:
    """One replicated job as the plugins see it: how many pods each of its Jobs runs."""

    name: str
    ancestor: str | None
    count: int
    replicas: int = 1

    @property
    def total_pods(self) -> int:
        return self.count * self.replicas


@dataclass
class RuntimeInfo:
    trainjob_name: str
    namespace: str | None
    # The runtime's own policies, shared with the runtime object: read them, never change them.
    ml_policy: MLPolicy
    pod_group_policy: PodGroupPolicy | None
    jobset_labels: dict[str, str]
    jobset_annotations: dict[str, str]
    jobset_spec: dict[str, Any]
    pod_sets: list[PodSetInfo]
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    # Values plugins resolved for later phases, e.g. the MPI slots per node.
    resolved: dict[str, Any] = field(default_factory=dict)
    # The runtime as written, before the TrainJob's patches: what validation checks names against.
    runtime_name: str = ""
    runtime: AnyTrainingRuntime | None = None
    # False when the render is read only for its JobSet (admission): builders then generate no
    # keys and emit no Secret holding them.
    key_material: bool = True

    @functools.cached_property
    def runtime_spec(self) -> dict[str, Any]:
        """The runtime's spec as a dict, dumped only for the checks that read it (most renders don't)."""
        return self.runtime.spec.to_dict() if self.runtime is not None else {}

    def runtime_containers(self, job_name: str, *, init: bool = False) -> list[str] | None:
        """Container names of a replicated job of the unpatched runtime; None if no such job."""
        for job in (self.runtime_spec.get("template") or {}).get("spec", {}).get("replicatedJobs") or []:
            if job.get("name") == job_name:
                pod_spec = ((job.get("template") or {}).get("spec") or {}).get("template", {}).get("spec") or {}
                key = "initContainers" if init else "containers"
                return [str(c.get("name")) for c in pod_spec.get(key) or []]
        return None

    # ---------------------------------------------------------------- lookups into the template

    def replicated_job(self, name: str) -> dict[str, Any] | None:
        for job in self.jobset_spec.get("replicatedJobs") or []:
            if job.get("name") == name:
                found: dict[str, Any] = job
                return found
        return None

    def pod_spec(self, job_name: str) -> dict[str, Any] | None:
        job = self.replicated_job(job_name)
        if job is None:
            return None
        template = job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        spec: dict[str, Any] = template.setdefault("spec", {})
        return spec

    def pod_template(self, job_name: str) -> dict[str, Any] | None:
        job = self.replicated_job(job_name)
        if job is None:
            return None
        template: dict[str, Any] = job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        return template

    def pod_set(self, name: str) -> PodSetInfo | None:
        return next((ps for ps in self.pod_sets if ps.name == name), None)

    def pod_sets_by_ancestor(self, ancestor: str) -> list[PodSetInfo]:
        return [ps for ps in self.pod_sets if ps.ancestor == ancestor]

    def trainer_pod_set(self) -> PodSetInfo | None:
        """The pod set whose ``node`` container runs the trainer's command (``launcher`` for MPI)."""
        trainers = self.pod_sets_by_ancestor(ANCESTOR_TRAINER)
        return trainers[-1] if trainers else None

    def node_pod_sets(self) -> list[PodSetInfo]:
        """The pod sets that are training nodes: receive resourcesPerNode and the trainer image."""
        if self.ml_policy.mpi is not None:
            names = {NODE, LAUNCHER} if self.ml_policy.mpi.run_launcher_as_node else {NODE}
            return [ps for ps in self.pod_sets if ps.name in names]
        return self.pod_sets_by_ancestor(ANCESTOR_TRAINER)

    @property
    def subdomain(self) -> str:
        network = self.jobset_spec.get("network") or {}
        subdomain: str = network.get("subdomain") or self.trainjob_name
        return subdomain

    def endpoints(self, pod_set: PodSetInfo) -> list[str]:
        """Pod DNS names JobSet gives this pod set: ``<jobset>-<rjob>-<jobIdx>-<podIdx>.<subdomain>``."""
        return [
            f"{self.trainjob_name}-{pod_set.name}-{job}-{pod}.{self.subdomain}"
            for job in range(pod_set.replicas)
            for pod in range(pod_set.count)
        ]


# ---------------------------------------------------------------------------- extension points


class Plugin(Protocol):
    @property
    def name(self) -> str: ...


@runtime_checkable
class CustomValidationPlugin(Protocol):
    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]: ...


@runtime_checkable
class MLPolicyPlugin(Protocol):
    def enforce_ml_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None: ...


@runtime_checkable
class PodGroupPolicyPlugin(Protocol):
    def enforce_pod_group_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None: ...


@runtime_checkable
class PreBuildPlugin(Protocol):
    def pre_build(self, info: RuntimeInfo, trainjob: TrainJob) -> None: ...


@runtime_checkable
class ComponentBuilderPlugin(Protocol):
    def build(self, info: RuntimeInfo, trainjob: TrainJob) -> list[dict[str, Any]]: ...
