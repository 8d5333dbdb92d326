"""Kueue's admission rules for the jobs it manages (TrainJobs here), written once.

From Kueue's ``pkg/controller/jobframework/{validation,tas_validation}.go``: the queue-name label
is a DNS subdomain and cannot change while the job runs; the priority-class label cannot be added
to a running job nor removed; the max-execution-time label is a positive integer, fixed while the
job runs; and the TAS annotations on every pod set's template are consistent. Pure functions over
label/annotation maps and Kueue ``PodSet`` models (the pod sets of the rendered job).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from runtimes.errors import FieldError
from scheduler.api.kueue import (
    PODSET_GROUP_NAME,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    PodSet,
)
from scheduler.api.names import dns_subdomain_error, qualified_name_error

MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
MAX_SLICE_LAYERS = 3


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
    errors: list[FieldError] = []
    queue = labels.get(QUEUE_NAME_LABEL)
    if queue is not None and (problem := dns_subdomain_error(queue)) is not None:
        errors.append(FieldError(_label_path(QUEUE_NAME_LABEL), problem))
    elif (
        queue is not None
        and local_queues is not None
        and queue not in local_queues
        and (old_labels is None or old_labels.get(QUEUE_NAME_LABEL) != queue)
    ):
        known = ", ".join(sorted(local_queues)) or "none exist"
        errors.append(
            FieldError(
                _label_path(QUEUE_NAME_LABEL),
                f"LocalQueue {queue!r} does not exist in the job's namespace (known: {known})",
            )
        )
    priority = labels.get(PRIORITY_CLASS_LABEL)
    if priority is not None:
        if (problem := dns_subdomain_error(priority)) is not None:
            errors.append(FieldError(_label_path(PRIORITY_CLASS_LABEL), problem))
        elif (
            priority_classes is not None
            and priority not in priority_classes
            and (old_labels is None or old_labels.get(PRIORITY_CLASS_LABEL) != priority)
        ):
            known = ", ".join(sorted(priority_classes)) or "none exist"
            errors.append(
                FieldError(
                    _label_path(PRIORITY_CLASS_LABEL),
                    f"WorkloadPriorityClass {priority!r} does not exist (known: {known})",
                )
            )
    max_exec = labels.get(MAX_EXEC_TIME_LABEL)
    if max_exec is not None and not (max_exec.isdigit() and int(max_exec) > 0):
        errors.append(
            FieldError(_label_path(MAX_EXEC_TIME_LABEL), f"must be an integer greater than 0, got {max_exec!r}")
        )
    if old_labels is None:
        return errors
    old_queue = old_labels.get(QUEUE_NAME_LABEL)
    if not suspended and old_queue != queue:
        errors.append(
            FieldError(
                _label_path(QUEUE_NAME_LABEL),
                f"field is immutable while the job is not suspended (was {old_queue!r}, got {queue!r})",
            )
        )
    old_priority = old_labels.get(PRIORITY_CLASS_LABEL)
    if old_priority is not None and priority is None:
        errors.append(FieldError(_label_path(PRIORITY_CLASS_LABEL), "WorkloadPriorityClass cannot be removed"))
    elif old_priority is None and priority is not None and not suspended:
        errors.append(
            FieldError(_label_path(PRIORITY_CLASS_LABEL), "WorkloadPriorityClass cannot be added to a running job")
        )
    old_max_exec = old_labels.get(MAX_EXEC_TIME_LABEL)
    if not suspended and old_max_exec != max_exec:
        errors.append(
            FieldError(
                _label_path(MAX_EXEC_TIME_LABEL),
                f"field is immutable while the job is not suspended (was {old_max_exec!r}, got {max_exec!r})",
            )
        )
    return errors


def _level_errors(value: str, path: str) -> list[FieldError]:
    problem = qualified_name_error(value)
    return [] if problem is None else [FieldError(path, f"must be a node label key: {problem}")]


def _slice_constraints_errors(raw: str, path: str, count: int) -> list[FieldError]:
    try:
        layers: Any = json.loads(raw)
    except ValueError:
        return [FieldError(path, 'must be a JSON list such as [{"topology": "cloud.com/rack", "size": 4}]')]
    if not isinstance(layers, list) or not 1 <= len(layers) <= MAX_SLICE_LAYERS:
        return [FieldError(path, f"must be a JSON list of 1 to {MAX_SLICE_LAYERS} {{topology, size}} entries")]
    errors: list[FieldError] = []
    seen: set[str] = set()
    sizes: list[int] = []
    for i, layer in enumerate(layers):
        topology = layer.get("topology") if isinstance(layer, dict) else None
        size = layer.get("size") if isinstance(layer, dict) else None
        if not isinstance(topology, str):
            errors.append(FieldError(f"{path}[{i}].topology", "must be a node label key"))
        else:
            errors += _level_errors(topology, f"{path}[{i}].topology")
            if topology in seen:
                errors.append(FieldError(f"{path}[{i}].topology", f"{topology!r} is listed twice"))
            seen.add(topology)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            errors.append(FieldError(f"{path}[{i}].size", f"must be an integer of at least 1, got {size!r}"))
            continue
        if i == 0 and size > count:
            errors.append(FieldError(f"{path}[{i}].size", f"must not exceed the pod set count {count}, got {size}"))
        if sizes and sizes[-1] % size != 0:
            errors.append(
                FieldError(
                    f"{path}[{i}].size",
                    f"must evenly divide the size of the layer above ({sizes[-1]}), got {size}",
                )
            )
        sizes.append(size)
    return errors


def validate_podset_topology(annotations: Mapping[str, str], count: int, path: str) -> list[FieldError]:
    """Kueue's TAS annotation rules for one pod set's template annotations (``path`` names them)."""
    errors: list[FieldError] = []

    def at(key: str) -> str:
        return f"{path}[{key}]"

    required = annotations.get(PODSET_REQUIRED_TOPOLOGY)
    preferred = annotations.get(PODSET_PREFERRED_TOPOLOGY)
    unconstrained = annotations.get(PODSET_UNCONSTRAINED_TOPOLOGY)
    slice_level = annotations.get(PODSET_SLICE_REQUIRED_TOPOLOGY)
    slice_size = annotations.get(PODSET_SLICE_SIZE)
    group = annotations.get(PODSET_GROUP_NAME)
    constraints = annotations.get(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS)

    present = [
        key
        for key, value in (
            (PODSET_REQUIRED_TOPOLOGY, required),
            (PODSET_PREFERRED_TOPOLOGY, preferred),
            (PODSET_UNCONSTRAINED_TOPOLOGY, unconstrained),
        )
        if value is not None
    ]
    if len(present) > 1:
        errors.append(FieldError(path, f"must not set more than one of {', '.join(present)}; pick one"))
    for key, value in (
        (PODSET_REQUIRED_TOPOLOGY, required),
        (PODSET_PREFERRED_TOPOLOGY, preferred),
        (PODSET_SLICE_REQUIRED_TOPOLOGY, slice_level),
    ):
        if value is not None:
            errors += _level_errors(value, at(key))
    if unconstrained is not None and unconstrained not in ("true", "false"):
        errors.append(
            FieldError(at(PODSET_UNCONSTRAINED_TOPOLOGY), f'must be "true" or "false", got {unconstrained!r}')
        )
    if slice_size is not None:
        if slice_level is None:
            errors.append(
                FieldError(at(PODSET_SLICE_SIZE), f"may only be set together with {PODSET_SLICE_REQUIRED_TOPOLOGY}")
            )
        if not slice_size.isdigit() or int(slice_size) < 1:
            errors.append(FieldError(at(PODSET_SLICE_SIZE), f"must be an integer of at least 1, got {slice_size!r}"))
        elif int(slice_size) > count:
            errors.append(
                FieldError(at(PODSET_SLICE_SIZE), f"must not exceed the pod set count {count}, got {slice_size}")
            )
    elif slice_level is not None:
        errors.append(FieldError(at(PODSET_SLICE_REQUIRED_TOPOLOGY), f"requires {PODSET_SLICE_SIZE} to be set too"))
    if constraints is not None:
        if slice_level is not None or slice_size is not None:
            errors.append(
                FieldError(
                    at(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS),
                    f"must not be set together with {PODSET_SLICE_REQUIRED_TOPOLOGY} or {PODSET_SLICE_SIZE}",
                )
            )
        errors += _slice_constraints_errors(constraints, at(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS), count)
    if group is not None:
        if required is None and preferred is None:
            errors.append(
                FieldError(
                    at(PODSET_GROUP_NAME),
                    f"requires {PODSET_REQUIRED_TOPOLOGY} or {PODSET_PREFERRED_TOPOLOGY}",
                )
            )
        if slice_level is not None or constraints is not None:
            errors.append(FieldError(at(PODSET_GROUP_NAME), "must not be combined with slice topology annotations"))
        if group.lstrip("-").isdigit():
            errors.append(FieldError(at(PODSET_GROUP_NAME), f"must not be a number, got {group!r}"))
    return errors


def validate_pod_sets_topology(pod_sets: Sequence[PodSet], path: str = "podSets") -> list[FieldError]:
    """TAS annotation rules over every pod set of a (rendered) job."""
    errors: list[FieldError] = []
    for pod_set in pod_sets:
        annotations = pod_set.template.metadata.annotations
        errors += validate_podset_topology(
            annotations, pod_set.count, f"{path}[{pod_set.name}].template.metadata.annotations"
        )
    return errors
