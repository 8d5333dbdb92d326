"""``/mutate/trainjobs`` and ``/validate/trainjobs``.

Mutation writes Trainer's and Kueue's defaults (``trainjob_defaults``): on CREATE the queue-name
label from the namespace's LocalQueue named ``default`` (not beside Kueue, whose own webhook writes
it: ``mutate_beside_kueue``), ``spec.suspend: true`` for a queued job, Trainer's CRD defaults, and
``runtimePatches[].time``; on UPDATE only the patch times. The patch is the diff.

Validation asks, in order from cheap to costly: Kueue's job label rules
(``scheduler.api.job_validation``), on UPDATE Trainer's immutability rules
(``runtimes.validation.validate_trainjob_update``), Trainer's TrainJob rules with its runtime
(``runtimes.validation``), then — for a queued job — Kueue's TAS annotation rules on the
rendered pod sets and the engine's "can ever fit" answer (``webhooks.fit``). A queued job is
rendered once, and that render runs Trainer's rules: each review merges the runtime's template
and runs the plugin checks once, and the TrainJob is parsed once.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    SUPPORT_LABEL,
    TRAINER_API_VERSION,
    TRAINJOB_KIND,
    TrainJob,
)
from runtimes.errors import FieldError
from runtimes.validation import validate_trainjob_update
from scheduler.api.checks import check_object
from scheduler.api.job_validation import validate_job_labels
from scheduler.api.kueue import DEFAULT_LOCAL_QUEUE_NAME, QUEUE_NAME_LABEL
from scheduler.api.validation import errors_from_pydantic
from webhooks.fit import check_fit, check_rules
from webhooks.handlers import describe_errors, reviews_objects, subject_of
from webhooks.handlers.trainjob_defaults import default_trainjob, default_trainjob_update
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict


def _wrong_kind(request: AdmissionRequest, document: dict[str, Any]) -> Verdict | None:
    if document.get("kind") == TRAINJOB_KIND and document.get("apiVersion") != TRAINER_API_VERSION:
        # A TrainJob of another version: refused in the words every reader uses.
        return Verdict.invalid(check_object(document, name=request.name, namespace=request.namespace).message)
    if document.get("apiVersion") != TRAINER_API_VERSION or document.get("kind") != TRAINJOB_KIND:
        return Verdict.invalid(
            f"expected a {TRAINER_API_VERSION} {TRAINJOB_KIND}, got "
            f"{document.get('apiVersion')!r} {document.get('kind')!r}"
        )
    return None


def _mutate(request: AdmissionRequest, document: dict[str, Any], cache: ObjectCache, *, default_queue: bool) -> Verdict:
    if (wrong := _wrong_kind(request, document)) is not None:
        return wrong
    if request.operation == "UPDATE":
        return Verdict.mutate(document, default_trainjob_update(document, request.old_object))

    def has_default_queue(namespace: str) -> bool:
        return default_queue and cache.local_queue(namespace, DEFAULT_LOCAL_QUEUE_NAME) is not None

    return Verdict.mutate(document, default_trainjob(document, request.namespace, has_default_queue))


@reviews_objects("a TrainJob")
def mutate(request: AdmissionRequest, document: dict[str, Any], cache: ObjectCache) -> Verdict:
    return _mutate(request, document, cache, default_queue=True)


@reviews_objects("a TrainJob")
def mutate_beside_kueue(request: AdmissionRequest, document: dict[str, Any], cache: ObjectCache) -> Verdict:
    """``mutate`` beside Kueue: the queue-name label is Kueue's own webhook's to default (the same
    LocalQueue ``default``, with its own exceptions: not for a job whose owner Kueue manages, and
    the job's managedBy and suspension decided with the label at that moment)."""
    return _mutate(request, document, cache, default_queue=False)


def _parse(document: dict[str, Any]) -> tuple[TrainJob | None, list[FieldError]]:
    try:
        return TrainJob.model_validate(document), []
    except ValidationError as error:
        return None, errors_from_pydantic(error)


def _read(request: AdmissionRequest, document: dict[str, Any]) -> tuple[TrainJob | None, str, list[str]]:
    """The TrainJob (parsed by the path every reader shares), its parse failure, its unknown fields."""
    # Trainer's TrainJob rules run below with the runtime, in one pass; here: parse, unknown fields.
    check = check_object(document, name=request.name, namespace=request.namespace, rules=False)
    trainjob = check.obj if isinstance(check.obj, TrainJob) else None
    return trainjob, check.message, check.warnings()


def _local_queues_by_namespace(cache: ObjectCache) -> dict[str, frozenset[str]]:
    names: dict[str, set[str]] = {}
    for queue in cache.all("LocalQueue"):
        names.setdefault(queue.namespace or "", set()).add(queue.name)
    return {namespace: frozenset(queues) for namespace, queues in names.items()}


def _priority_class_names(cache: ObjectCache) -> frozenset[str]:
    return frozenset(cache.names("WorkloadPriorityClass"))


@reviews_objects("a TrainJob")
def validate(request: AdmissionRequest, document: dict[str, Any], cache: ObjectCache) -> Verdict:
    if (wrong := _wrong_kind(request, document)) is not None:
        return wrong
    trainjob, parse_failure, unknown = _read(request, document)
    if trainjob is None:
        return Verdict.invalid(parse_failure, unknown)
    if not trainjob.metadata.namespace and request.namespace:
        trainjob.metadata.namespace = request.namespace
    namespace = trainjob.metadata.namespace or ""
    subject = subject_of(TRAINJOB_KIND, trainjob.name or request.name, namespace)
    old = None
    if request.operation == "UPDATE" and request.old_object is not None:
        # An old object that no longer parses cannot constrain the update; judge the new one alone.
        old, _ = _parse(request.old_object)
    old_labels = old.metadata.labels if old is not None else None
    labels = trainjob.metadata.labels
    errors = validate_job_labels(
        labels,
        old_labels,
        suspended=trainjob.spec.suspend is True,
        priority_classes=cache.derived("priority-class-names", _priority_class_names),
        local_queues=cache.derived("local-queues-by-namespace", _local_queues_by_namespace).get(namespace, frozenset()),
    )
    if old is not None:
        errors += validate_trainjob_update(trainjob, old)
    ref = trainjob.spec.runtime_ref
    runtime = cache.runtime(ref.effective_kind, ref.name, namespace)
    queue_changed = old_labels is None or old_labels.get(QUEUE_NAME_LABEL) != labels.get(QUEUE_NAME_LABEL)
    # Fit is judged at submission (or when the job moves queues), never on later updates such as
    # Kueue unsuspending it: the cluster may have changed, the job was already accepted.
    judge_fit = runtime is not None and QUEUE_NAME_LABEL in labels and queue_changed
    never_fits = None
    if judge_fit and runtime is not None:
        # Rendering the pod sets runs every TrainJob rule too: one pass over the runtime per review.
        fit = check_fit(cache, trainjob, runtime, ask_engine=not errors)
        errors += fit.errors
        never_fits = fit.never_fits
    else:
        errors += check_rules(cache, trainjob, runtime)
    warnings = list(unknown)
    deprecated = runtime is not None and runtime.metadata.labels.get(SUPPORT_LABEL) == "deprecated"
    if runtime is not None and runtime.kind == CLUSTER_TRAINING_RUNTIME_KIND and deprecated:
        warnings.append(
            f'Referenced ClusterTrainingRuntime "{runtime.name}" is deprecated and will be removed in a future release'
        )
    if errors:
        return Verdict.invalid(describe_errors(subject, errors), warnings)
    if never_fits is not None:
        return Verdict.deny(f"{subject} can never be admitted: {never_fits}", warnings=warnings)
    return Verdict.allow(warnings)
