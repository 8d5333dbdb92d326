"""``/validate/runtimes``: TrainingRuntime and ClusterTrainingRuntime, by Trainer's rules.

The rules live in ``runtimes.validation`` and are asked through ``scheduler.api.checks`` (the
CLI's path too); this handler words the answer, and warns (as Trainer does) when a
ClusterTrainingRuntime is labelled deprecated, and about unknown fields.
"""

from __future__ import annotations

from typing import Any

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    SUPPORT_LABEL,
    TRAINER_API_VERSION,
    TRAINING_RUNTIME_KIND,
)
from scheduler.api.checks import check_object, subject_of
from webhooks.handlers import reviews_objects
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict


@reviews_objects()
def validate(request: AdmissionRequest, document: dict[str, Any], cache: ObjectCache) -> Verdict:
    kind = document.get("kind")
    if kind not in (TRAINING_RUNTIME_KIND, CLUSTER_TRAINING_RUNTIME_KIND) or (
        document.get("apiVersion") != TRAINER_API_VERSION
    ):
        subject = subject_of(str(kind), request.name, request.namespace)
        return Verdict.invalid(
            f"{subject}: expected apiVersion {TRAINER_API_VERSION} with kind "
            f"{TRAINING_RUNTIME_KIND} or {CLUSTER_TRAINING_RUNTIME_KIND}, got {document.get('apiVersion')!r} {kind!r}"
        )
    # Trainer does not re-validate TrainingRuntime updates, only ClusterTrainingRuntime ones.
    if request.operation == "UPDATE" and kind == TRAINING_RUNTIME_KIND:
        return Verdict.allow()
    check = check_object(document, name=request.name, namespace=request.namespace)
    warnings = []
    deprecated = check.obj is not None and check.obj.metadata.labels.get(SUPPORT_LABEL) == "deprecated"
    if deprecated and check.obj is not None and kind == CLUSTER_TRAINING_RUNTIME_KIND:
        warnings.append(
            f'ClusterTrainingRuntime "{check.obj.name}" is deprecated and will be removed in a future release'
        )
    warnings += check.warnings()
    if check.errors:
        return Verdict.invalid(check.message, warnings)
    return Verdict.allow(warnings)
