"""Kueue's admission rules for the jobs it manages (TrainJobs here), written once.

From Kueue's ``pkg/controller/jobframework/{validation,tas_validation}.go``: the queue-name label
is a DNS subdomain and cannot change while the job runs; the priority-class label cannot be added
to a running job nor removed; the max-execution-time label is a positive integer, fixed while the
job runs; and the TAS annotations on every pod set's template are consistent. Pure functions over
label/annotation maps and Kueue ``PodSet`` models (the pod sets of the rendered job).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from runtimes.errors import FieldError
from scheduler.api.kueue import (
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    PodSet,
)
from scheduler.api.names import dns_subdomain_error
from scheduler.api.tas_annotations import (
    MAX_SLICE_LAYERS as MAX_SLICE_LAYERS,  # re-exported: named here before the rules moved
)
from scheduler.api.tas_annotations import (
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS as PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
)
from scheduler.api.tas_annotations import check_podset_topology

MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"


def _label_path(key: str) -> str:
    return f"metadata.labels[{key}]"


def validate_job_labels(
    labels: Mapping[str, str],
    old_labels: Mapping[str, str] | None = None,
    *,
    suspended: bool,
    priority_classes: Collection[str] | None = None,
    local_queues: Collection[str] | None = None,
) -> list[FieldError]:
    """Kueue's label rules for a job; ``old_labels`` is None on CREATE.

    ``suspended`` is whether the job (as submitted) is suspended. ``priority_classes`` are the
    WorkloadPriorityClass names that exist, when known; a label naming another one is refused.
    ``local_queues`` are the LocalQueue names of the job's namespace, when known: a new queue
    name (on CREATE, or changed on UPDATE) must name one of them, or the job would wait forever.
    """
    errors = _label_value_errors(labels, old_labels, priority_classes, local_queues)
    if old_labels is not None:
        errors += _label_update_errors(labels, old_labels, suspended=suspended)
    return errors


def _reference_error(
    labels: Mapping[str, str],
    old_labels: Mapping[str, str] | None,
    label: str,
    known: Collection[str] | None,
    missing: str,
) -> FieldError | None:
    """The label's value must be a valid name and, when ``known`` is given and the name is new
    (CREATE, or changed on UPDATE), one of ``known``: a name that was already there may outlive its
    object. ``missing`` words an unknown name, with ``{name}`` in it."""
    value = labels.get(label)
    if value is None:
        return None
    if (problem := dns_subdomain_error(value)) is not None:
        return FieldError(_label_path(label), problem)
    new = old_labels is None or old_labels.get(label) != value
    if known is not None and value not in known and new:
        listed = ", ".join(sorted(known)) or "none exist"
        return FieldError(_label_path(label), f"{missing.format(name=repr(value))} (known: {listed})")
    return None


def _label_value_errors(
    labels: Mapping[str, str],
    old_labels: Mapping[str, str] | None,
    priority_classes: Collection[str] | None,
    local_queues: Collection[str] | None,
) -> list[FieldError]:
    """Each label's value: a valid name, naming a queue or priority class that exists; a positive time."""
    queue = _reference_error(
        labels, old_labels, QUEUE_NAME_LABEL, local_queues, "LocalQueue {name} does not exist in the job's namespace"
    )
    priority = _reference_error(
        labels, old_labels, PRIORITY_CLASS_LABEL, priority_classes, "WorkloadPriorityClass {name} does not exist"
    )
    errors = [error for error in (queue, priority) if error is not None]
    max_exec = labels.get(MAX_EXEC_TIME_LABEL)
    if max_exec is not None and not (max_exec.isdigit() and int(max_exec) > 0):
        errors.append(
            FieldError(_label_path(MAX_EXEC_TIME_LABEL), f"must be an integer greater than 0, got {max_exec!r}")
        )
    return errors


def _immutable_while_running(
    labels: Mapping[str, str], old_labels: Mapping[str, str], label: str, *, suspended: bool
) -> list[FieldError]:
    """A label that may change only while the job is suspended."""
    value, old_value = labels.get(label), old_labels.get(label)
    if suspended or old_value == value:
        return []
    return [
        FieldError(
            _label_path(label), f"field is immutable while the job is not suspended (was {old_value!r}, got {value!r})"
        )
    ]


def _label_update_errors(
    labels: Mapping[str, str], old_labels: Mapping[str, str], *, suspended: bool
) -> list[FieldError]:
    """What may change on UPDATE: the queue and max execution time only while suspended; the priority
    class never removed, and added only while suspended."""
    errors = _immutable_while_running(labels, old_labels, QUEUE_NAME_LABEL, suspended=suspended)
    priority, old_priority = labels.get(PRIORITY_CLASS_LABEL), old_labels.get(PRIORITY_CLASS_LABEL)
    if old_priority is not None and priority is None:
        errors.append(FieldError(_label_path(PRIORITY_CLASS_LABEL), "WorkloadPriorityClass cannot be removed"))
    elif old_priority is None and priority is not None and not suspended:
        errors.append(
            FieldError(_label_path(PRIORITY_CLASS_LABEL), "WorkloadPriorityClass cannot be added to a running job")
        )
    errors += _immutable_while_running(labels, old_labels, MAX_EXEC_TIME_LABEL, suspended=suspended)
    return errors


def validate_podset_topology(annotations: Mapping[str, str], count: int, path: str) -> list[FieldError]:
    """Kueue's TAS annotation rules for one pod set's template annotations (``path`` names them).
    The rules live in ``scheduler.api.tas_annotations``, shared with the engine."""
    _, problems = check_podset_topology(annotations, count)
    return [FieldError(path + p.path, p.message) for p in problems if not p.at_placement]


def validate_pod_sets_topology(pod_sets: Sequence[PodSet], path: str = "podSets") -> list[FieldError]:
    """TAS annotation rules over every pod set of a (rendered) job."""
    errors: list[FieldError] = []
    for pod_set in pod_sets:
        annotations = pod_set.template.metadata.annotations
        errors += validate_podset_topology(
            annotations, pod_set.count, f"{path}[{pod_set.name}].template.metadata.annotations"
        )
    return errors
