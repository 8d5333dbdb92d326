"""``/validate/runtimes``: TrainingRuntime and ClusterTrainingRuntime, by Trainer's rules.

The rules live in ``runtimes.validation``; this handler parses, asks and words the answer, and
warns (as Trainer does) when a ClusterTrainingRuntime is labelled deprecated.
"""

from __future__ import annotations

from pydantic import ValidationError

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    SUPPORT_LABEL,
    TRAINER_API_VERSION,
    TRAINING_RUNTIME_KIND,
    ClusterTrainingRuntime,
    TrainingRuntime,
)
from runtimes.validation import validate_runtime
from scheduler.api.validation import errors_from_pydantic
from webhooks.handlers import describe_errors, subject_of
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict

_MODELS: dict[str, type[TrainingRuntime] | type[ClusterTrainingRuntime]] = {
    TRAINING_RUNTIME_KIND: TrainingRuntime,
    CLUSTER_TRAINING_RUNTIME_KIND: ClusterTrainingRuntime,
}


def validate(request: AdmissionRequest, cache: ObjectCache) -> Verdict:
    if request.operation in ("DELETE", "CONNECT"):
        return Verdict.allow()
    document = request.object
    if document is None:
        return Verdict.invalid(f"{request.operation} of {request.kind} carries no request.object")
    kind = document.get("kind")
    subject = subject_of(str(kind), request.name, request.namespace)
    model = _MODELS.get(kind) if isinstance(kind, str) else None
    if model is None or document.get("apiVersion") != TRAINER_API_VERSION:
        return Verdict.invalid(
            f"{subject}: expected apiVersion {TRAINER_API_VERSION} with kind "
            f"{TRAINING_RUNTIME_KIND} or {CLUSTER_TRAINING_RUNTIME_KIND}, got {document.get('apiVersion')!r} {kind!r}"
        )
    # Trainer does not re-validate TrainingRuntime updates, only ClusterTrainingRuntime ones.
    if request.operation == "UPDATE" and kind == TRAINING_RUNTIME_KIND:
        return Verdict.allow()
    try:
        runtime = model.model_validate(document)
    except ValidationError as error:
        return Verdict.invalid(describe_errors(subject, errors_from_pydantic(error)))
    warnings = []
    if kind == CLUSTER_TRAINING_RUNTIME_KIND and runtime.metadata.labels.get(SUPPORT_LABEL) == "deprecated":
        warnings.append(
            f'ClusterTrainingRuntime "{runtime.name}" is deprecated and will be removed in a future release'
        )
    errors = validate_runtime(runtime)
    if errors:
        return Verdict.invalid(describe_errors(subject, errors), warnings)
    return Verdict.allow(warnings)
