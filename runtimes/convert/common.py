"""What both conversions share: the result, the errors, and the TrainJob and runtime skeletons."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from runtimes.api.trainer import (
    ANCESTOR_LABEL,
    ANCESTOR_TRAINER,
    TRAINER_API_VERSION,
    TRAINING_RUNTIME_KIND,
    TRAINJOB_KIND,
)


class ConversionError(ValueError):
    """Input that is not a convertible Training Operator v1 job."""


@dataclass
class Conversion:
    trainjob: dict[str, Any]
    runtime: dict[str, Any] | None = None
    unmapped: list[str] = field(default_factory=list)

    def objects(self) -> list[dict[str, Any]]:
        return [self.runtime, self.trainjob] if self.runtime is not None else [self.trainjob]


def replica_specs(job: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    specs = (job.get("spec") or {}).get(key)
    if not isinstance(specs, dict) or not specs:
        raise ConversionError(f"{job.get('kind')} {job_name(job)!r}: spec.{key} must list the replicas")
    return specs


def job_name(job: dict[str, Any]) -> str:
    return str((job.get("metadata") or {}).get("name") or "")


def trainjob_base(job: dict[str, Any], runtime_ref: dict[str, Any]) -> dict[str, Any]:
    metadata = job.get("metadata") or {}
    out_meta: dict[str, Any] = {"name": metadata.get("name", "")}
    for key in ("namespace", "labels", "annotations"):
        if metadata.get(key):
            out_meta[key] = copy.deepcopy(metadata[key])
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": TRAINJOB_KIND,
        "metadata": out_meta,
        "spec": {"runtimeRef": runtime_ref},
    }


def map_run_policy(job: dict[str, Any], spec: dict[str, Any], unmapped: list[str]) -> int | None:
    """runPolicy fields with a TrainJob equivalent; returns backoffLimit for a generated runtime."""
    run_policy = (job.get("spec") or {}).get("runPolicy") or {}
    if run_policy.get("activeDeadlineSeconds") is not None:
        spec["activeDeadlineSeconds"] = run_policy["activeDeadlineSeconds"]
    if run_policy.get("suspend") is not None:
        spec["suspend"] = run_policy["suspend"]
    for key in ("cleanPodPolicy", "ttlSecondsAfterFinished", "schedulingPolicy", "managedBy"):
        if run_policy.get(key) is not None:
            unmapped.append(
                f"spec.runPolicy.{key}: no TrainJob equivalent (queueing and gangs come from Kueue labels "
                "and the runtime's podGroupPolicy); dropped"
            )
    backoff = run_policy.get("backoffLimit")
    return int(backoff) if backoff is not None else None


def main_container(template: dict[str, Any], preferred: str) -> dict[str, Any] | None:
    containers = (template.get("spec") or {}).get("containers") or []
    for container in containers:
        if container.get("name") == preferred:
            found: dict[str, Any] = container
            return found
    return containers[0] if containers else None


def replicated_job(name: str, pod_template: dict[str, Any], *, trainer: bool) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"template": pod_template}}
    if trainer:
        template["metadata"] = {"labels": {ANCESTOR_LABEL: ANCESTOR_TRAINER}}
    return {"name": name, "template": template}


def training_runtime(
    job: dict[str, Any],
    name: str,
    ml_policy: dict[str, Any],
    replicated_jobs: list[dict[str, Any]],
    backoff: int | None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    namespace = (job.get("metadata") or {}).get("namespace")
    if namespace:
        metadata["namespace"] = namespace
    template_spec: dict[str, Any] = {"replicatedJobs": replicated_jobs}
    if backoff is not None:
        # v1's backoffLimit counted pod restarts; the closest v2 notion restarts the whole gang.
        template_spec["failurePolicy"] = {"maxRestarts": backoff}
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": TRAINING_RUNTIME_KIND,
        "metadata": metadata,
        "spec": {"mlPolicy": ml_policy, "template": {"spec": template_spec}},
    }
