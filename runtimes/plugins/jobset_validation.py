"""The JobSet plugin's webhook checks: initializers and patches must fit the runtime's template."""

from __future__ import annotations

import re
from typing import Any

from runtimes.api.trainer import (
    ANCESTOR_CONTAINERS,
    ANCESTOR_DATASET_INITIALIZER,
    ANCESTOR_MODEL_INITIALIZER,
    DATASET_INITIALIZER,
    MODEL_INITIALIZER,
    NODE,
    TrainJob,
)
from runtimes.errors import FieldError
from runtimes.plugins.framework import RuntimeInfo

# Containers whose env the runtime plugins own: patches may not set it (Trainer's rule).
ENV_OWNED_CONTAINERS = frozenset({NODE, DATASET_INITIALIZER, MODEL_INITIALIZER})
# A domain-prefixed path such as "kueue.x-k8s.io/manager" (Trainer checks runtimePatches managers).
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DOMAIN_PREFIXED_PATH = re.compile(rf"^{_DNS_SUBDOMAIN}\.[a-z]+(/[A-Za-z0-9._~%!$&'()*+,;=:@-]+)+$")


def validate_initializers(info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
    initializer = trainjob.spec.initializer
    if initializer is None:
        return []
    errors: list[FieldError] = []
    for field, given, ancestor in (
        ("dataset", initializer.dataset, ANCESTOR_DATASET_INITIALIZER),
        ("model", initializer.model, ANCESTOR_MODEL_INITIALIZER),
    ):
        if given is None:
            continue
        pod_sets = info.pod_sets_by_ancestor(ancestor)
        container = ANCESTOR_CONTAINERS[ancestor]
        if not pod_sets:
            errors.append(
                FieldError(
                    f"spec.initializer.{field}",
                    f"runtime {info.runtime_name!r} has no {ancestor} replicated job, so it cannot "
                    f"initialize a {field}; remove spec.initializer.{field} or pick a runtime with a "
                    f"{ancestor} job",
                )
            )
            continue
        for pod_set in pod_sets:
            if container not in (info.runtime_containers(pod_set.name) or []):
                errors.append(
                    FieldError(
                        f"spec.initializer.{field}",
                        f"replicated job {pod_set.name!r} of runtime {info.runtime_name!r} must have a "
                        f"container named {container!r}",
                    )
                )
    return errors


def validate_patches(info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
    errors: list[FieldError] = []
    managers: set[str] = set()
    for index, patch in enumerate(trainjob.spec.runtime_patches or []):
        path = f"spec.runtimePatches[{index}]"
        if not _DOMAIN_PREFIXED_PATH.match(patch.manager):
            errors.append(
                FieldError(
                    f"{path}.manager",
                    f"{patch.manager!r} is not accepted: must be a domain-prefixed path such as "
                    "example.com/platform-team",
                )
            )
        elif patch.manager in managers:
            errors.append(FieldError(f"{path}.manager", f"{patch.manager!r} appears twice; one entry per manager"))
        managers.add(patch.manager)
        template = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        jobs = template.spec.replicated_jobs if template is not None and template.spec is not None else None
        for job_index, job in enumerate(jobs or []):
            job_path = f"{path}.trainingRuntimeSpec.template.spec.replicatedJobs[{job_index}]"
            pod_template = job.template.spec.template if job.template and job.template.spec else None
            pod_spec = pod_template.spec.to_dict() if pod_template and pod_template.spec else {}
            errors.extend(
                _check_job_and_containers(
                    info, job.name, pod_spec, f"{job_path}.name", f"{job_path}.template.spec.template.spec"
                )
            )
    for index, spec_override in enumerate(trainjob.spec.pod_spec_overrides or []):
        path = f"spec.podSpecOverrides[{index}]"
        for target_index, target in enumerate(spec_override.target_jobs):
            errors.extend(
                _check_job_and_containers(
                    info, target.name, spec_override.pod_spec(), f"{path}.targetJobs[{target_index}].name", path
                )
            )
    for index, override in enumerate(trainjob.spec.pod_template_overrides or []):
        path = f"spec.podTemplateOverrides[{index}]"
        pod_spec = override.spec.to_dict() if override.spec else {}
        for target_index, target in enumerate(override.target_jobs):
            errors.extend(
                _check_job_and_containers(
                    info, target.name, pod_spec, f"{path}.targetJobs[{target_index}].name", f"{path}.spec"
                )
            )
    return errors


def _check_job_and_containers(
    info: RuntimeInfo, job_name: str, pod_spec: dict[str, Any], job_path: str, spec_path: str
) -> list[FieldError]:
    known_jobs = [
        str(job.get("name"))
        for job in (info.runtime_spec.get("template") or {}).get("spec", {}).get("replicatedJobs") or []
    ]
    if job_name not in known_jobs:
        return [
            FieldError(
                job_path,
                f"replicated job {job_name!r} does not exist in runtime {info.runtime_name!r}; "
                f"its replicated jobs are: {', '.join(known_jobs) or '(none)'}",
            )
        ]
    errors: list[FieldError] = []
    for key, init in (("containers", False), ("initContainers", True)):
        known = info.runtime_containers(job_name, init=init) or []
        for index, container in enumerate(pod_spec.get(key) or []):
            name = container.get("name")
            if name not in known:
                errors.append(
                    FieldError(
                        f"{spec_path}.{key}[{index}].name",
                        f"container {name!r} does not exist in replicated job {job_name!r} of runtime "
                        f"{info.runtime_name!r}; its {key} are: {', '.join(known) or '(none)'}",
                    )
                )
            elif container.get("env") and name in ENV_OWNED_CONTAINERS:
                errors.append(
                    FieldError(
                        f"{spec_path}.{key}[{index}].env",
                        f"must not set env of the {name!r} container: use spec.trainer.env or "
                        "spec.initializer.*.env instead",
                    )
                )
    return errors
