"""Kueue's admission rules for its own objects, written once for the webhook, the CLI and controllers.

These follow Kueue's ``pkg/webhooks`` validators and the CEL rules of ``apis/kueue/v1beta2``
(ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Topology, WorkloadPriorityClass, and the
Workload's schema bounds). Every function is pure: a parsed object (and, on update, the old one)
in, a list of ``FieldError`` out (the one shape shared with ``runtimes``). An empty list means
Kueue would accept the object. The quota objects' rules are in ``quota_validation``, the shared
field rules in ``field_rules``; ``validate_kueue_object`` is the one entry point per kind.
"""

from __future__ import annotations

from typing import Any

from runtimes.errors import FieldError as FieldError
from runtimes.k8s.meta import Resource
from scheduler.api.admission_check_rules import ADMISSION_CHECK_VALIDATORS
from scheduler.api.field_rules import INT32_MAX, INT32_MIN, validate_taint, validate_toleration
from scheduler.api.field_rules import errors_from_pydantic as errors_from_pydantic
from scheduler.api.kueue import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Topology,
    Workload,
    WorkloadPriorityClass,
)
from scheduler.api.names import dns_subdomain_error, label_value_error, qualified_name_error
from scheduler.api.quota_validation import validate_cluster_queue, validate_cohort, validate_local_queue

__all__ = [
    "FieldError",
    "errors_from_pydantic",
    "validate_cluster_queue",
    "validate_cohort",
    "validate_kueue_object",
    "validate_local_queue",
    "validate_resource_flavor",
    "validate_topology",
    "validate_workload",
    "validate_workload_priority_class",
]

HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_FLAVOR_LIST_ITEMS = 8  # ResourceFlavor nodeLabels, nodeTaints, tolerations
MAX_TOPOLOGY_LEVELS = 16
MAX_POD_SETS = 18  # Workload spec.podSets maxItems (shared/reference/kueue.md)


def validate_resource_flavor(flavor: ResourceFlavor, old: ResourceFlavor | None = None) -> list[FieldError]:
    spec = flavor.spec
    errors: list[FieldError] = []
    for field, count in (
        ("nodeLabels", len(spec.node_labels)),
        ("nodeTaints", len(spec.node_taints)),
        ("tolerations", len(spec.tolerations)),
    ):
        if count > MAX_FLAVOR_LIST_ITEMS:
            errors.append(FieldError(f"spec.{field}", f"must have at most {MAX_FLAVOR_LIST_ITEMS} items, got {count}"))
    for key, value in spec.node_labels.items():
        if (problem := qualified_name_error(key)) is not None:
            errors.append(FieldError("spec.nodeLabels", problem))
        if (problem := label_value_error(value)) is not None:
            errors.append(FieldError(f"spec.nodeLabels[{key}]", problem))
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.node_taints):
        errors += validate_taint(taint, f"spec.nodeTaints[{i}]")
        if (taint.key, taint.effect) in seen:
            errors.append(
                FieldError(f"spec.nodeTaints[{i}]", f"duplicate taint key {taint.key!r} with effect {taint.effect}")
            )
        seen.add((taint.key, taint.effect))
    for i, toleration in enumerate(spec.tolerations):
        errors += validate_toleration(toleration, f"spec.tolerations[{i}]")
    if spec.topology_name is not None:
        if (problem := dns_subdomain_error(spec.topology_name)) is not None:
            errors.append(FieldError("spec.topologyName", problem))
        if not spec.node_labels:
            errors.append(FieldError("spec.nodeLabels", "must have at least one label when spec.topologyName is set"))
    if old is not None and old.spec.topology_name is not None and old.spec.topology_name != spec.topology_name:
        errors.append(FieldError("spec.topologyName", f"field is immutable once set (was {old.spec.topology_name!r})"))
    return errors


def validate_topology(topology: Topology, old: Topology | None = None) -> list[FieldError]:
    levels = topology.level_labels
    errors: list[FieldError] = []
    if not 1 <= len(levels) <= MAX_TOPOLOGY_LEVELS:
        errors.append(FieldError("spec.levels", f"must have 1 to {MAX_TOPOLOGY_LEVELS} levels, got {len(levels)}"))
    for i, label in enumerate(levels):
        path = f"spec.levels[{i}].nodeLabel"
        if (problem := qualified_name_error(label)) is not None:
            errors.append(FieldError(path, problem))
        if label in levels[:i]:
            errors.append(FieldError(path, f"{label!r} is listed twice; levels must be unique"))
        if label == HOSTNAME_LABEL and i != len(levels) - 1:
            errors.append(FieldError(path, f"{HOSTNAME_LABEL} is only allowed as the lowest (last) level"))
    if old is not None and old.level_labels != levels:
        hostname_lowest = bool(levels) and levels[-1] == HOSTNAME_LABEL
        old_hostname_lowest = bool(old.level_labels) and old.level_labels[-1] == HOSTNAME_LABEL
        if not (hostname_lowest and old_hostname_lowest):
            errors.append(
                FieldError(
                    "spec.levels",
                    f"field is immutable unless {HOSTNAME_LABEL} is the lowest level before and after the change",
                )
            )
    return errors


def validate_workload_priority_class(
    wpc: WorkloadPriorityClass, old: WorkloadPriorityClass | None = None
) -> list[FieldError]:
    errors: list[FieldError] = []
    if not INT32_MIN <= wpc.value <= INT32_MAX:
        errors.append(FieldError("value", f"must fit in a 32-bit integer, got {wpc.value}"))
    if wpc.description is not None and len(wpc.description) > 2048:
        errors.append(FieldError("description", f"must be at most 2048 characters, got {len(wpc.description)}"))
    return errors


def validate_workload(workload: Workload, old: Workload | None = None) -> list[FieldError]:
    """The Workload CRD's schema bounds: pod sets (1 to 18, unique names, counts), queue, priority."""
    spec = workload.spec
    errors: list[FieldError] = []
    if not 1 <= len(spec.pod_sets) <= MAX_POD_SETS:
        errors.append(FieldError("spec.podSets", f"must have 1 to {MAX_POD_SETS} pod sets, got {len(spec.pod_sets)}"))
    seen: set[str] = set()
    partial = 0
    for index, pod_set in enumerate(spec.pod_sets):
        path = f"spec.podSets[{index}]"
        if (problem := dns_subdomain_error(pod_set.name)) is not None:
            errors.append(FieldError(f"{path}.name", problem))
        elif pod_set.name in seen:
            errors.append(FieldError(f"{path}.name", f"{pod_set.name!r} appears twice; pod set names are unique"))
        seen.add(pod_set.name)
        if not 0 <= pod_set.count <= INT32_MAX:
            errors.append(FieldError(f"{path}.count", f"must be between 0 and {INT32_MAX}, got {pod_set.count}"))
        if pod_set.min_count is not None:
            partial += 1
            if not 1 <= pod_set.min_count <= pod_set.count:
                errors.append(
                    FieldError(
                        f"{path}.minCount", f"must be between 1 and count ({pod_set.count}), got {pod_set.min_count}"
                    )
                )
    if partial > 1:
        errors.append(FieldError("spec.podSets", "at most one pod set may set minCount"))
    if spec.queue_name and (problem := dns_subdomain_error(spec.queue_name)) is not None:
        errors.append(FieldError("spec.queueName", problem))
    if spec.priority is not None and not INT32_MIN <= spec.priority <= INT32_MAX:
        errors.append(FieldError("spec.priority", f"must fit in a 32-bit integer, got {spec.priority}"))
    seconds = spec.maximum_execution_time_seconds
    if seconds is not None and seconds < 1:
        errors.append(FieldError("spec.maximumExecutionTimeSeconds", f"must be at least 1, got {seconds}"))
    return errors


_VALIDATORS: dict[type[Resource], Any] = {
    ClusterQueue: validate_cluster_queue,
    Cohort: validate_cohort,
    LocalQueue: validate_local_queue,
    ResourceFlavor: validate_resource_flavor,
    Topology: validate_topology,
    WorkloadPriorityClass: validate_workload_priority_class,
    Workload: validate_workload,
    # The admission-check kinds' rules live with them (scheduler.api.admission_check_rules).
    **ADMISSION_CHECK_VALIDATORS,
}
VALIDATED_KINDS = tuple(model.__name__ for model in _VALIDATORS)


def validate_kueue_object(obj: Resource, old: Resource | None = None) -> list[FieldError]:
    """Kueue's admission rules for ``obj`` (and, on update, the transition from ``old``)."""
    validator = _VALIDATORS.get(type(obj))
    if validator is None:
        return [FieldError("kind", f"{obj.kind!r} is not validated here; expected one of {', '.join(VALIDATED_KINDS)}")]
    errors: list[FieldError] = []
    # On CREATE with metadata.generateName the API server picks the name after admission.
    named = obj.name or not obj.metadata.generate_name
    if named and (problem := dns_subdomain_error(obj.name)) is not None:
        errors.append(FieldError("metadata.name", problem))
    if old is not None and type(old) is not type(obj):
        old = None
    result: list[FieldError] = validator(obj, old)
    return errors + result
