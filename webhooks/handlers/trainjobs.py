"""``/mutate/trainjobs`` and ``/validate/trainjobs``.

Mutation (on CREATE, as Kueue's job webhook does): default the ``kueue.x-k8s.io/queue-name``
label from the namespace's LocalQueue named ``default``, suspend every queued job so Kueue
decides when it starts, and write the runtime reference's API defaults. The patch is the diff.

Validation asks, in order from cheap to costly: Kueue's job label rules
(``scheduler.api.job_validation``), Trainer's TrainJob rules with its runtime
(``runtimes.validation``), then — for a queued job — Kueue's TAS annotation rules on the
rendered pod sets and the engine's "can ever fit" answer (``webhooks.fit``).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    SUPPORT_LABEL,
    TRAINER_API_VERSION,
    TRAINER_GROUP,
    TRAINJOB_KIND,
    TrainJob,
)
from runtimes.errors import FieldError
from runtimes.validation import validate_trainjob
from scheduler.api.job_validation import validate_job_labels
from scheduler.api.kueue import DEFAULT_LOCAL_QUEUE_NAME, QUEUE_NAME_LABEL
from scheduler.api.validation import errors_from_pydantic
from webhooks.fit import check_fit
from webhooks.handlers import describe_errors, subject_of
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict


def _wrong_kind(request: AdmissionRequest, document: dict[str, Any]) -> Verdict | None:
    if document.get("apiVersion") != TRAINER_API_VERSION or document.get("kind") != TRAINJOB_KIND:
        return Verdict.invalid(
            f"expected a {TRAINER_API_VERSION} {TRAINJOB_KIND}, got "
            f"{document.get('apiVersion')!r} {document.get('kind')!r}"
        )
    return None


def mutate(request: AdmissionRequest, cache: ObjectCache) -> Verdict:
    if request.operation != "CREATE":
        return Verdict.allow()
    document = request.object
    if document is None:
        return Verdict.invalid("CREATE of a TrainJob carries no request.object")
    if (wrong := _wrong_kind(request, document)) is not None:
        return wrong
    mutated = copy.deepcopy(document)
    metadata = mutated.get("metadata")
    spec = mutated.get("spec")
    if not isinstance(metadata, dict) or not isinstance(spec, dict):
        # Leave shape errors to the validating webhook, which names the field.
        return Verdict.allow()
    namespace = request.namespace or metadata.get("namespace")
    labels = metadata.get("labels")
    if labels is None:
        labels = {}
    if not isinstance(labels, dict):
        return Verdict.allow()
    if QUEUE_NAME_LABEL not in labels and namespace and cache.local_queue(namespace, DEFAULT_LOCAL_QUEUE_NAME):
        labels[QUEUE_NAME_LABEL] = DEFAULT_LOCAL_QUEUE_NAME
        metadata["labels"] = labels
    if QUEUE_NAME_LABEL in labels and spec.get("suspend") is not True:
        # Kueue starts the job by unsuspending it once the workload is admitted.
        spec["suspend"] = True
    runtime_ref = spec.get("runtimeRef")
    if isinstance(runtime_ref, dict):
        runtime_ref.setdefault("apiGroup", TRAINER_GROUP)
        runtime_ref.setdefault("kind", CLUSTER_TRAINING_RUNTIME_KIND)
    return Verdict.mutate(document, mutated)


def _parse(document: dict[str, Any]) -> tuple[TrainJob | None, list[FieldError]]:
    try:
        return TrainJob.model_validate(document), []
    except ValidationError as error:
        return None, errors_from_pydantic(error)


def validate(request: AdmissionRequest, cache: ObjectCache) -> Verdict:
    if request.operation in ("DELETE", "CONNECT"):
        return Verdict.allow()
    document = request.object
    if document is None:
        return Verdict.invalid(f"{request.operation} of a TrainJob carries no request.object")
    if (wrong := _wrong_kind(request, document)) is not None:
        return wrong
    trainjob, errors = _parse(document)
    subject = subject_of(TRAINJOB_KIND, request.name, request.namespace)
    if trainjob is None:
        return Verdict.invalid(describe_errors(subject, errors))
    if not trainjob.metadata.namespace and request.namespace:
        trainjob.metadata.namespace = request.namespace
    namespace = trainjob.metadata.namespace or ""
    subject = subject_of(TRAINJOB_KIND, trainjob.name or request.name, namespace)
    old_labels = None
    if request.operation == "UPDATE" and request.old_object is not None:
        old, _ = _parse(request.old_object)
        old_labels = old.metadata.labels if old is not None else None
    labels = trainjob.metadata.labels
    errors = validate_job_labels(
        labels,
        old_labels,
        suspended=trainjob.spec.suspend is True,
        priority_classes=cache.names("WorkloadPriorityClass"),
        local_queues={q.name for q in cache.all("LocalQueue") if q.namespace == namespace},
    )
    ref = trainjob.spec.runtime_ref
    runtime = cache.runtime(ref.effective_kind, ref.name, namespace)
    errors += validate_trainjob(trainjob, runtime)
    if errors:
        return Verdict.invalid(describe_errors(subject, errors))
    warnings = []
    deprecated = runtime is not None and runtime.metadata.labels.get(SUPPORT_LABEL) == "deprecated"
    if runtime is not None and runtime.kind == CLUSTER_TRAINING_RUNTIME_KIND and deprecated:
        warnings.append(
            f'Referenced ClusterTrainingRuntime "{runtime.name}" is deprecated and will be removed in a future release'
        )
    queue_changed = old_labels is None or old_labels.get(QUEUE_NAME_LABEL) != labels.get(QUEUE_NAME_LABEL)
    if runtime is None or QUEUE_NAME_LABEL not in labels or not queue_changed:
        # Fit is judged at submission (or when the job moves queues), never on later updates such
        # as Kueue unsuspending it: the cluster may have changed, the job was already accepted.
        return Verdict.allow(warnings)
    problems, reason = check_fit(cache, trainjob, runtime)
    if problems:
        return Verdict.invalid(describe_errors(subject, problems), warnings)
    if reason is not None:
        return Verdict.deny(f"{subject} can never be admitted: {reason}", warnings=warnings)
    return Verdict.allow(warnings)
