"""Trainer's admission rules for TrainJobs and (Cluster)TrainingRuntimes, as pure functions.

``validate_trainjob`` and ``validate_runtime`` return every problem found, each a
:class:`FieldError` naming the field, the value and what would be accepted; an empty list means
valid. They cover Trainer's webhook rules (``pkg/webhooks``), its plugins' ``Validate`` and the
CRD's CEL rules, so trainyard refuses at submit time what the API server or the controller
would refuse later. The webhook and ``render_trainjob`` both call them.
"""

from __future__ import annotations

import re

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    DEFAULT_MANAGED_BY,
    MULTIKUEUE_MANAGED_BY,
    NUM_PROC_PER_NODE_WORDS,
    TRAINER_GROUP,
    TRAINING_RUNTIME_KIND,
    AnyTrainingRuntime,
    TrainJob,
)
from runtimes.errors import FieldError
from runtimes.plugins.info import build_runtime_info
from runtimes.plugins.intree import in_tree_registry
from runtimes.plugins.pipeline import RuntimePipeline
from runtimes.plugins.registry import PluginRegistry
from runtimes.runtime_validation import validate_runtime

_RFC1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_STORAGE_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")

__all__ = ["FieldError", "validate_runtime", "validate_trainjob"]


def validate_trainjob(
    trainjob: TrainJob,
    runtime: AnyTrainingRuntime | None,
    *,
    registry: PluginRegistry | None = None,
) -> list[FieldError]:
    """Everything wrong with ``trainjob`` run on ``runtime`` (``None``: the runtime was not found)."""
    errors = _validate_metadata(trainjob) + _validate_spec(trainjob)
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
        return errors
    if not ref.name:
        errors.append(FieldError("spec.runtimeRef.name", "must name a runtime, e.g. torch-distributed"))
        return errors
    if runtime is None or runtime.kind != ref.effective_kind or runtime.metadata.name != ref.name:
        errors.append(
            FieldError(
                "spec.runtimeRef",
                f"{ref.effective_kind} {ref.name!r} does not exist: the runtime must be created before "
                "the TrainJob (kubectl get clustertrainingruntimes lists the installed ones)",
            )
        )
        return errors
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
    errors.extend(RuntimePipeline(registry or in_tree_registry()).validate(info, trainjob))
    return errors


def _validate_metadata(trainjob: TrainJob) -> list[FieldError]:
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
    errors: list[FieldError] = []
    trainer = spec.trainer
    if trainer is not None:
        if trainer.num_nodes is not None and trainer.num_nodes < 1:
            errors.append(
                FieldError(
                    "spec.trainer.numNodes",
                    f"{trainer.num_nodes} is not accepted: must be at least 1 (the number of training nodes)",
                )
            )
        value = trainer.num_proc_per_node
        if isinstance(value, int) and value < 1:
            errors.append(FieldError("spec.trainer.numProcPerNode", f"{value} is not accepted: must be at least 1"))
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
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds < 1:
        errors.append(
            FieldError(
                "spec.activeDeadlineSeconds",
                f"{spec.active_deadline_seconds} is not accepted: must be at least 1 second",
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
