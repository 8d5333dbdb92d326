"""Trainer's admission rules for TrainJobs and (Cluster)TrainingRuntimes, as pure functions.

``validate_trainjob`` and ``validate_runtime`` return every problem found, each a
:class:`FieldError` naming the field, the value and what would be accepted; an empty list means
valid. They cover Trainer's webhook rules (``pkg/webhooks``), its plugins' ``Validate`` and the
CRD's CEL rules, so trainyard refuses at submit time what the API server or the controller
would refuse later. The webhook and ``render_trainjob`` both call them.
"""

from __future__ import annotations

import re
from typing import Any

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    DEFAULT_MANAGED_BY,
    MULTIKUEUE_MANAGED_BY,
    NUM_PROC_PER_NODE_WORDS,
    TRAINER_GROUP,
    TRAINING_RUNTIME_KIND,
    AnyTrainingRuntime,
    Trainer,
    TrainJob,
)
from runtimes.errors import FieldError
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.info import build_runtime_info
from runtimes.plugins.intree import pipeline_of
from runtimes.plugins.registry import PluginRegistry
from runtimes.runtime_validation import validate_runtime
from runtimes.trainjob_bounds import validate_trainjob_bounds

_RFC1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_STORAGE_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

__all__ = [
    "FieldError",
    "check_trainjob",
    "validate_runtime",
    "validate_trainjob",
    "validate_trainjob_fields",
    "validate_trainjob_name",
    "validate_trainjob_update",
]


def validate_trainjob(
    trainjob: TrainJob,
    runtime: AnyTrainingRuntime | None,
    *,
    registry: PluginRegistry | None = None,
) -> list[FieldError]:
    """Everything wrong with ``trainjob`` run on ``runtime`` (``None``: the runtime was not found)."""
    errors, _ = check_trainjob(trainjob, runtime, registry=registry)
    return errors


def check_trainjob(
    trainjob: TrainJob,
    runtime: AnyTrainingRuntime | None,
    *,
    registry: PluginRegistry | None = None,
) -> tuple[list[FieldError], RuntimeInfo | None]:
    """``validate_trainjob``'s errors, and the ``RuntimeInfo`` the plugins checked (None before that).

    ``render_trainjob`` builds from that same RuntimeInfo, so one render merges the runtime's
    template and runs the plugins' checks once.
    """
    errors = validate_trainjob_fields(trainjob)
    if validate_trainjob_bounds(trainjob.spec):
        return errors, None  # too many overrides or patches: refused before any merge
    ref = trainjob.spec.runtime_ref
    if ref.effective_api_group != TRAINER_GROUP or ref.effective_kind not in (
        TRAINING_RUNTIME_KIND,
        CLUSTER_TRAINING_RUNTIME_KIND,
    ):
        errors.append(
            FieldError(
                "spec.runtimeRef",
                f"unsupported runtime {ref.effective_kind}.{ref.effective_api_group}: use kind "
                f"ClusterTrainingRuntime or TrainingRuntime of apiGroup {TRAINER_GROUP}",
            )
        )
        return errors, None
    if not ref.name:
        errors.append(FieldError("spec.runtimeRef.name", "must name a runtime, e.g. torch-distributed"))
        return errors, None
    if runtime is None or runtime.kind != ref.effective_kind or runtime.metadata.name != ref.name:
        errors.append(
            FieldError(
                "spec.runtimeRef",
                f"{ref.effective_kind} {ref.name!r} does not exist: the runtime must be created before "
                "the TrainJob (kubectl get clustertrainingruntimes lists the installed ones)",
            )
        )
        return errors, None
    if runtime.kind == TRAINING_RUNTIME_KIND and runtime.metadata.namespace not in (
        None,
        trainjob.metadata.namespace,
    ):
        errors.append(
            FieldError(
                "spec.runtimeRef",
                f"TrainingRuntime {ref.name!r} is in namespace {runtime.metadata.namespace!r}, not the "
                f"TrainJob's {trainjob.metadata.namespace!r}; a TrainingRuntime serves its own namespace only",
            )
        )
    errors.extend(_validate_against_ml_policy(trainjob, runtime))
    info = build_runtime_info(trainjob, runtime)
    errors.extend(pipeline_of(registry).validate(info, trainjob))
    return errors, info


def validate_trainjob_fields(trainjob: TrainJob) -> list[FieldError]:
    """The rules a TrainJob meets on its own, before any runtime is looked up: the CRD's schema
    bounds and CEL rules on the object (what the API server refuses on read)."""
    return validate_trainjob_name(trainjob) + _validate_spec(trainjob) + validate_trainjob_bounds(trainjob.spec)


def validate_trainjob_name(trainjob: TrainJob) -> list[FieldError]:
    """The one TrainJob rule that reads its name (every other rule reads its spec, labels and
    runtime): callers that remember verdicts per job shape run it per job."""
    name = trainjob.metadata.name
    if not name:
        return [FieldError("metadata.name", "must be set: a lower-case DNS label such as my-job")]
    if len(name) > 63 or not _RFC1035_LABEL.match(name):
        return [
            FieldError(
                "metadata.name",
                f"{name!r} is not accepted: must be a DNS label of at most 63 characters — lower-case "
                "letters, digits and '-', starting with a letter and ending with a letter or digit",
            )
        ]
    return []


def _validate_spec(trainjob: TrainJob) -> list[FieldError]:
    spec = trainjob.spec
    errors = _validate_trainer(spec.trainer) if spec.trainer is not None else []
    if spec.initializer is not None:
        for field, given in (("dataset", spec.initializer.dataset), ("model", spec.initializer.model)):
            uri = given.storage_uri if given is not None else None
            if uri and (len(uri) > 2048 or not _STORAGE_URI.match(uri)):
                errors.append(
                    FieldError(
                        f"spec.initializer.{field}.storageUri",
                        f"{uri!r} is not accepted: must be a URI with a scheme, such as "
                        "hf://org/name, s3://bucket/path or file:///data",
                    )
                )
    if spec.managed_by is not None and spec.managed_by not in (DEFAULT_MANAGED_BY, MULTIKUEUE_MANAGED_BY):
        errors.append(
            FieldError(
                "spec.managedBy",
                f"{spec.managed_by!r} is not accepted: must be {DEFAULT_MANAGED_BY} or {MULTIKUEUE_MANAGED_BY}",
            )
        )
    if spec.active_deadline_seconds is not None and not 1 <= spec.active_deadline_seconds <= INT64_MAX:
        errors.append(
            FieldError(
                "spec.activeDeadlineSeconds",
                f"{spec.active_deadline_seconds} is not accepted: must be at least 1 second (a 64-bit integer)",
            )
        )
    return errors


def _validate_trainer(trainer: Trainer) -> list[FieldError]:
    """spec.trainer's node count, processes per node and per-node resources, each in range."""
    errors: list[FieldError] = []
    if trainer.num_nodes is not None and trainer.num_nodes < 1:
        errors.append(
            FieldError(
                "spec.trainer.numNodes",
                f"{trainer.num_nodes} is not accepted: must be at least 1 (the number of training nodes)",
            )
        )
    elif trainer.num_nodes is not None and trainer.num_nodes > INT32_MAX:
        errors.append(
            FieldError(
                "spec.trainer.numNodes",
                f"{trainer.num_nodes} is not accepted: must be at most {INT32_MAX} (a 32-bit integer)",
            )
        )
    value = trainer.num_proc_per_node
    if isinstance(value, int) and value < 1:
        errors.append(FieldError("spec.trainer.numProcPerNode", f"{value} is not accepted: must be at least 1"))
    elif isinstance(value, int) and value > INT32_MAX:
        errors.append(
            FieldError(
                "spec.trainer.numProcPerNode",
                f"{value} is not accepted: must be at most {INT32_MAX} (a 32-bit integer)",
            )
        )
    elif isinstance(value, str) and value not in NUM_PROC_PER_NODE_WORDS:
        errors.append(
            FieldError(
                "spec.trainer.numProcPerNode",
                f"{value!r} is not accepted: must be an integer >= 1 (or, for torch, auto, cpu or gpu)",
            )
        )
    if trainer.resources_per_node is not None:
        for part, values in (
            ("requests", trainer.resources_per_node.requests),
            ("limits", trainer.resources_per_node.limits),
        ):
            for resource, quantity in values.items():
                if quantity.value < 0:
                    errors.append(
                        FieldError(
                            f"spec.trainer.resourcesPerNode.{part}.{resource}",
                            f"{quantity} is not accepted: must not be negative",
                        )
                    )
    return errors


def _validate_against_ml_policy(trainjob: TrainJob, runtime: AnyTrainingRuntime) -> list[FieldError]:
    trainer = trainjob.spec.trainer
    ml_policy = runtime.spec.ml_policy
    if trainer is None or ml_policy is None:
        return []
    if (
        trainer.num_proc_per_node is not None
        and ml_policy.torch is None
        and ml_policy.mpi is None
        and not isinstance(trainer.num_proc_per_node, int)
    ):
        return [
            FieldError(
                "spec.trainer.numProcPerNode",
                f"{trainer.num_proc_per_node!r} is not accepted by runtime {runtime.metadata.name!r}: "
                "only torch runtimes take auto, cpu or gpu",
            )
        ]
    return []


# ---------------------------------------------------------------------------------------- UPDATE


def validate_trainjob_update(trainjob: TrainJob, old: TrainJob) -> list[FieldError]:
    """Trainer's rules for changing a TrainJob: what is fixed once created, and what may change only
    while the TrainJob is suspended (the CRD's CEL transition rules and the JobSet plugin's checks).

    As for CEL transition rules, an optional field is held to its old value only when it is set on
    both sides. ``runtimePatches[].time`` is ignored: Trainer's defaulter stamps it on every write.
    """
    spec, old_spec = trainjob.spec, old.spec
    errors: list[FieldError] = []
    ref, old_ref = spec.runtime_ref, old_spec.runtime_ref
    identity = (ref.name, ref.effective_api_group, ref.effective_kind)
    if identity != (old_ref.name, old_ref.effective_api_group, old_ref.effective_kind):
        errors.append(
            FieldError(
                "spec.runtimeRef",
                f"field is immutable: was {old_ref.effective_kind} {old_ref.name!r}, got {ref.effective_kind} "
                f"{ref.name!r} (keep the old runtimeRef, or create a new TrainJob to use another runtime)",
            )
        )
    for path, new_part, old_part in (
        ("spec.initializer", spec.initializer, old_spec.initializer),
        ("spec.trainer", spec.trainer, old_spec.trainer),
    ):
        if new_part is not None and old_part is not None and new_part.to_dict() != old_part.to_dict():
            errors.append(
                FieldError(
                    path,
                    "field is immutable (keep the value the TrainJob was created with, or delete and "
                    "recreate the TrainJob to change it)",
                )
            )
    if (
        spec.active_deadline_seconds is not None
        and old_spec.active_deadline_seconds is not None
        and spec.active_deadline_seconds != old_spec.active_deadline_seconds
    ):
        errors.append(
            FieldError(
                "spec.activeDeadlineSeconds",
                f"field is immutable: was {old_spec.active_deadline_seconds}, got {spec.active_deadline_seconds}",
            )
        )
    managed_by = spec.managed_by or DEFAULT_MANAGED_BY
    old_managed_by = old_spec.managed_by or DEFAULT_MANAGED_BY
    if managed_by != old_managed_by:
        errors.append(FieldError("spec.managedBy", f"field is immutable: was {old_managed_by!r}, got {managed_by!r}"))
    errors.extend(_suspended_only_changes(trainjob, old))
    errors.extend(_fixed_pod_patch_fields(trainjob, old))
    return errors


# PodSpecPatch fields with a ``self == oldSelf`` rule: once a manager patched them for a replicated
# job they stay; nodeSelector, affinity, tolerations and schedulingGates (what Kueue sets) may change.
FIXED_POD_PATCH_FIELDS = (
    "serviceAccountName",
    "volumes",
    "initContainers",
    "containers",
    "imagePullSecrets",
    "securityContext",
    "terminationGracePeriodSeconds",
)


def _pod_spec_patches(trainjob: TrainJob) -> dict[tuple[str, str], tuple[int, int, dict[str, Any]]]:
    """(manager, replicated job) -> (patch index, job index, pod spec patch) — the CEL list-map keys."""
    found: dict[tuple[str, str], tuple[int, int, dict[str, Any]]] = {}
    for index, patch in enumerate(trainjob.spec.runtime_patches or []):
        template = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        jobs = template.spec.replicated_jobs if template is not None and template.spec is not None else None
        for job_index, job in enumerate(jobs or []):
            pod = job.template.spec.template if job.template and job.template.spec else None
            if pod is not None and pod.spec is not None:
                found[(patch.manager, job.name)] = (index, job_index, pod.spec.to_dict())
    return found


def _fixed_pod_patch_fields(trainjob: TrainJob, old: TrainJob) -> list[FieldError]:
    old_patches = _pod_spec_patches(old)
    errors: list[FieldError] = []
    for key, (index, job_index, pod_spec) in _pod_spec_patches(trainjob).items():
        if key not in old_patches:
            continue
        old_pod_spec = old_patches[key][2]
        for name in FIXED_POD_PATCH_FIELDS:
            if name in pod_spec and name in old_pod_spec and pod_spec[name] != old_pod_spec[name]:
                errors.append(
                    FieldError(
                        f"spec.runtimePatches[{index}].trainingRuntimeSpec.template.spec.replicatedJobs"
                        f"[{job_index}].template.spec.template.spec.{name}",
                        f"field is immutable once manager {key[0]!r} set it for replicated job {key[1]!r} "
                        "(only nodeSelector, affinity, tolerations and schedulingGates may change)",
                    )
                )
    return errors


def _patches_without_time(trainjob: TrainJob) -> list[dict[str, object]]:
    patches = [patch.to_dict() for patch in trainjob.spec.runtime_patches or []]
    for patch in patches:
        patch.pop("time", None)
    return patches


def _suspended_only_changes(trainjob: TrainJob, old: TrainJob) -> list[FieldError]:
    """runtimePatches (HEAD), podTemplateOverrides (v2.1) and podSpecOverrides (v2.0) change
    only around a suspension.

    Like a core Job's template, they may change when the TrainJob is suspended before or after the
    update (so Kueue can inject its scheduling directives as it resumes the job, and take them out
    as it suspends it), and never while a replicated job still has active pods.
    """
    changed: list[tuple[str, str]] = []
    if _patches_without_time(trainjob) != _patches_without_time(old):
        changed.append(("spec.runtimePatches", "RuntimePatches"))
    overrides = [o.to_dict() for o in trainjob.spec.pod_template_overrides or []]
    if overrides != [o.to_dict() for o in old.spec.pod_template_overrides or []]:
        changed.append(("spec.podTemplateOverrides", "PodTemplateOverrides"))
    spec_overrides = [o.to_dict() for o in trainjob.spec.pod_spec_overrides or []]
    if spec_overrides != [o.to_dict() for o in old.spec.pod_spec_overrides or []]:
        changed.append(("spec.podSpecOverrides", "PodSpecOverrides"))
    if not changed:
        return []
    suspended, was_suspended = trainjob.spec.suspend is True, old.spec.suspend is True
    active = [job.name for job in (old.status.jobs_status if old.status else None) or [] if job.active > 0]
    errors: list[FieldError] = []
    for path, name in changed:
        if not suspended and not was_suspended:
            errors.append(
                FieldError(
                    path,
                    f"{name} can only be modified when the TrainJob is suspended before or after the update "
                    "(set spec.suspend to true in the same update, or suspend the TrainJob first)",
                )
            )
            continue
        errors.extend(
            FieldError(
                path,
                f"{name} cannot be modified when the JobSet's ReplicatedJob {job!r} is still active "
                "(status.jobsStatus), retry once its pods have stopped",
            )
            for job in active
        )
    return errors
