"""Kueue's admission rules for its own objects, written once for the webhook, the CLI and controllers.

These follow Kueue's ``pkg/webhooks`` validators and the CEL rules of ``apis/kueue/v1beta2``
(ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Topology, WorkloadPriorityClass). Every
function is pure: a parsed object (and, on update, the old one) in, a list of ``FieldError`` out
(the one shape shared with ``runtimes``). An empty list means Kueue would accept the object.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from runtimes.errors import FieldError as FieldError
from runtimes.k8s.core import Taint, Toleration
from runtimes.k8s.meta import LabelSelector, Resource
from runtimes.k8s.quantity import Quantity
from scheduler.api.kueue import (
    KUEUE_API_VERSIONS,
    ClusterQueue,
    Cohort,
    FairSharing,
    LocalQueue,
    ResourceFlavor,
    ResourceGroup,
    Topology,
    WorkloadPriorityClass,
)
from scheduler.api.names import dns_subdomain_error, label_value_error, qualified_name_error

HOSTNAME_LABEL = "kubernetes.io/hostname"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
MAX_RESOURCE_GROUPS = 16
MAX_FLAVORS_TOTAL = 256
MAX_COVERED_RESOURCES_TOTAL = 256
MAX_FLAVOR_RESOURCE_COMBINATIONS = 512
MAX_FLAVOR_LIST_ITEMS = 8  # ResourceFlavor nodeLabels, nodeTaints, tolerations
MAX_TOPOLOGY_LEVELS = 16
MIN_NONZERO_FAIR_SHARING_WEIGHT = Fraction(1, 10**9)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def errors_from_pydantic(error: ValidationError, prefix: str = "") -> list[FieldError]:
    """A pydantic failure to parse an object, as field errors a person can act on."""
    found: list[FieldError] = []
    for item in error.errors(include_url=False):
        path = prefix
        for part in item["loc"]:
            path = f"{path}[{part}]" if isinstance(part, int) else (f"{path}.{part}" if path else str(part))
        found.append(FieldError(path or "<object>", item["msg"]))
    return found


# ------------------------------------------------------------------------------------- parsing


def parse_kueue_object(document: dict[str, Any]) -> tuple[Resource | None, list[FieldError]]:
    """Parse one Kueue object of a kind the webhook validates; errors name the field."""
    from scheduler.api.kueue import KUEUE_KINDS

    api_version, kind = document.get("apiVersion"), document.get("kind")
    if api_version not in KUEUE_API_VERSIONS:
        return None, [
            FieldError("apiVersion", f"{api_version!r} is not a Kueue API version; use {KUEUE_API_VERSIONS[0]}")
        ]
    model = KUEUE_KINDS.get(kind) if isinstance(kind, str) else None
    if model is None or kind not in VALIDATED_KINDS:
        return None, [
            FieldError("kind", f"{kind!r} is not validated here; expected one of {', '.join(VALIDATED_KINDS)}")
        ]
    try:
        return model.model_validate(document), []
    except ValidationError as error:
        return None, errors_from_pydantic(error)


# -------------------------------------------------------------------------------- shared pieces


def _quantity_non_negative(quantity: Quantity | None, path: str) -> list[FieldError]:
    if quantity is not None and quantity.value < 0:
        return [FieldError(path, f"must be greater than or equal to 0, got {quantity.raw}")]
    return []


def validate_fair_sharing(fair_sharing: FairSharing | None, path: str) -> list[FieldError]:
    if fair_sharing is None or fair_sharing.weight is None:
        return []
    weight = fair_sharing.weight.value
    if weight < 0:
        return [FieldError(f"{path}.weight", f"must be greater than or equal to 0, got {fair_sharing.weight.raw}")]
    if 0 < weight <= MIN_NONZERO_FAIR_SHARING_WEIGHT:
        return [FieldError(f"{path}.weight", f"must be 0 or greater than 1e-9, got {fair_sharing.weight.raw}")]
    return []


def validate_resource_groups(
    groups: list[ResourceGroup], *, has_cohort: bool, limits_reason: str, check_lending: bool
) -> list[FieldError]:
    """Rules shared by ClusterQueue and Cohort ``spec.resourceGroups``."""
    errors: list[FieldError] = []
    if len(groups) > MAX_RESOURCE_GROUPS:
        errors.append(
            FieldError("spec.resourceGroups", f"must have at most {MAX_RESOURCE_GROUPS} items, got {len(groups)}")
        )
    seen_resources: dict[str, int] = {}
    seen_flavors: dict[str, int] = {}
    total_flavors = total_resources = 0
    for g, group in enumerate(groups):
        base = f"spec.resourceGroups[{g}]"
        total_flavors += len(group.flavors)
        total_resources += len(group.covered_resources)
        if not group.covered_resources:
            errors.append(FieldError(f"{base}.coveredResources", "must list at least one resource"))
        if not group.flavors:
            errors.append(FieldError(f"{base}.flavors", "must list at least one flavor"))
        combinations = len(group.flavors) * len(group.covered_resources)
        if combinations > MAX_FLAVOR_RESOURCE_COMBINATIONS:
            errors.append(
                FieldError(
                    base,
                    f"has {combinations} flavor-resource combinations; at most {MAX_FLAVOR_RESOURCE_COMBINATIONS}",
                )
            )
        for r, resource in enumerate(group.covered_resources):
            path = f"{base}.coveredResources[{r}]"
            if (problem := qualified_name_error(resource)) is not None:
                errors.append(FieldError(path, problem))
            if resource in seen_resources:
                errors.append(
                    FieldError(path, f"{resource!r} is already covered by resourceGroups[{seen_resources[resource]}]")
                )
            seen_resources.setdefault(resource, g)
        for f, flavor in enumerate(group.flavors):
            fbase = f"{base}.flavors[{f}]"
            if (problem := dns_subdomain_error(flavor.name)) is not None:
                errors.append(FieldError(f"{fbase}.name", problem))
            if flavor.name in seen_flavors:
                errors.append(
                    FieldError(
                        f"{fbase}.name",
                        f"flavor {flavor.name!r} is already listed in resourceGroups[{seen_flavors[flavor.name]}]",
                    )
                )
            seen_flavors.setdefault(flavor.name, g)
            names = [quota.name for quota in flavor.resources]
            if names != group.covered_resources:
                errors.append(
                    FieldError(
                        f"{fbase}.resources",
                        f"must list exactly the coveredResources {group.covered_resources} "
                        f"in the same order, got {names}",
                    )
                )
            for q, quota in enumerate(flavor.resources):
                qbase = f"{fbase}.resources[{q}]"
                errors += _quantity_non_negative(quota.nominal_quota, f"{qbase}.nominalQuota")
                errors += _quantity_non_negative(quota.borrowing_limit, f"{qbase}.borrowingLimit")
                errors += _quantity_non_negative(quota.lending_limit, f"{qbase}.lendingLimit")
                for field, limit in (
                    ("borrowingLimit", quota.borrowing_limit),
                    ("lendingLimit", quota.lending_limit),
                ):
                    if limit is not None and not has_cohort:
                        errors.append(FieldError(f"{qbase}.{field}", f"must be nil when {limits_reason}"))
                if (
                    check_lending
                    and quota.lending_limit is not None
                    and quota.lending_limit.value > quota.nominal_quota.value
                ):
                    errors.append(
                        FieldError(
                            f"{qbase}.lendingLimit",
                            f"must be less than or equal to nominalQuota ({quota.nominal_quota.raw}), "
                            f"got {quota.lending_limit.raw}",
                        )
                    )
    if total_flavors > MAX_FLAVORS_TOTAL:
        errors.append(
            FieldError("spec.resourceGroups", f"lists {total_flavors} flavors in total; at most {MAX_FLAVORS_TOTAL}")
        )
    if total_resources > MAX_COVERED_RESOURCES_TOTAL:
        errors.append(
            FieldError(
                "spec.resourceGroups",
                f"covers {total_resources} resources in total; at most {MAX_COVERED_RESOURCES_TOTAL}",
            )
        )
    return errors


def validate_label_selector(selector: LabelSelector | None, path: str) -> list[FieldError]:
    if selector is None:
        return []
    errors: list[FieldError] = []
    for key, value in selector.match_labels.items():
        if (problem := qualified_name_error(key)) is not None:
            errors.append(FieldError(f"{path}.matchLabels", problem))
        if (problem := label_value_error(value)) is not None:
            errors.append(FieldError(f"{path}.matchLabels[{key}]", problem))
    for i, requirement in enumerate(selector.match_expressions):
        base = f"{path}.matchExpressions[{i}]"
        if (problem := qualified_name_error(requirement.key)) is not None:
            errors.append(FieldError(f"{base}.key", problem))
        if requirement.operator in ("In", "NotIn"):
            if not requirement.values:
                errors.append(
                    FieldError(f"{base}.values", f"must be non-empty when operator is {requirement.operator}")
                )
        elif requirement.operator in ("Exists", "DoesNotExist"):
            if requirement.values:
                errors.append(FieldError(f"{base}.values", f"must be empty when operator is {requirement.operator}"))
        else:
            errors.append(
                FieldError(
                    f"{base}.operator",
                    f"{requirement.operator!r} is not one of In, NotIn, Exists, DoesNotExist",
                )
            )
    return errors


# ------------------------------------------------------------------------------------ per kind


def validate_cluster_queue(cq: ClusterQueue, old: ClusterQueue | None = None) -> list[FieldError]:
    spec = cq.spec
    errors: list[FieldError] = []
    if spec.cohort_name and (problem := dns_subdomain_error(spec.cohort_name)) is not None:
        errors.append(FieldError("spec.cohortName", problem))
    errors += validate_resource_groups(
        spec.resource_groups,
        has_cohort=bool(spec.cohort_name),
        limits_reason="cohort is empty",
        check_lending=True,
    )
    errors += validate_label_selector(spec.namespace_selector, "spec.namespaceSelector")
    borrow = spec.preemption.borrow_within_cohort
    if spec.preemption.reclaim_within_cohort == "Never" and borrow is not None and borrow.policy != "Never":
        errors.append(
            FieldError(
                "spec.preemption.borrowWithinCohort.policy",
                f"must be Never when reclaimWithinCohort is Never, got {borrow.policy}",
            )
        )
    fungibility = spec.flavor_fungibility
    if fungibility.preference is not None and not (
        fungibility.try_next_when_borrowing and fungibility.try_next_when_preempting
    ):
        errors.append(
            FieldError(
                "spec.flavorFungibility.preference",
                "may only be set when whenCanBorrow and whenCanPreempt are both TryNextFlavor",
            )
        )
    errors += validate_fair_sharing(spec.fair_sharing, "spec.fairSharing")
    if spec.admission_checks and spec.admission_checks_strategy is not None:
        errors.append(
            FieldError(
                "spec.admissionChecks",
                "must not be set together with spec.admissionChecksStrategy; use only the latter",
            )
        )
    flavors = {flavor.name for group in spec.resource_groups for flavor in group.flavors}
    if spec.admission_checks_strategy is not None:
        for i, rule in enumerate(spec.admission_checks_strategy.admission_checks):
            for j, name in enumerate(rule.on_flavors):
                if name not in flavors:
                    errors.append(
                        FieldError(
                            f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                            f"flavor {name!r} is not one of this ClusterQueue's flavors {sorted(flavors)}",
                        )
                    )
    return errors


def validate_cohort(cohort: Cohort, old: Cohort | None = None) -> list[FieldError]:
    spec = cohort.spec
    errors: list[FieldError] = []
    if spec.parent_name:
        if (problem := dns_subdomain_error(spec.parent_name)) is not None:
            errors.append(FieldError("spec.parentName", problem))
        elif spec.parent_name == cohort.name:
            errors.append(FieldError("spec.parentName", f"a Cohort cannot be its own parent ({cohort.name!r})"))
    errors += validate_resource_groups(
        spec.resource_groups,
        has_cohort=bool(spec.parent_name),
        limits_reason="parentName is empty",
        check_lending=False,
    )
    errors += validate_fair_sharing(spec.fair_sharing, "spec.fairSharing")
    return errors


def validate_local_queue(queue: LocalQueue, old: LocalQueue | None = None) -> list[FieldError]:
    errors: list[FieldError] = []
    if (problem := dns_subdomain_error(queue.spec.cluster_queue)) is not None:
        errors.append(FieldError("spec.clusterQueue", problem))
    if old is not None and old.spec.cluster_queue != queue.spec.cluster_queue:
        errors.append(
            FieldError(
                "spec.clusterQueue",
                f"field is immutable (was {old.spec.cluster_queue!r}, got {queue.spec.cluster_queue!r}); "
                "create a new LocalQueue instead",
            )
        )
    errors += validate_fair_sharing(queue.spec.fair_sharing, "spec.fairSharing")
    return errors


def _validate_taint(taint: Taint, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if (problem := qualified_name_error(taint.key)) is not None:
        errors.append(FieldError(f"{path}.key", problem))
    if taint.value and (problem := label_value_error(taint.value)) is not None:
        errors.append(FieldError(f"{path}.value", problem))
    if taint.effect not in TAINT_EFFECTS:
        errors.append(FieldError(f"{path}.effect", f"{taint.effect!r} is not one of {', '.join(TAINT_EFFECTS)}"))
    return errors


def _validate_toleration(toleration: Toleration, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    operator = toleration.operator or "Equal"
    if toleration.key and (problem := qualified_name_error(toleration.key)) is not None:
        errors.append(FieldError(f"{path}.key", problem))
    if operator not in TOLERATION_OPERATORS:
        errors.append(FieldError(f"{path}.operator", f"{operator!r} is not one of Equal, Exists"))
    elif operator == "Exists" and toleration.value:
        errors.append(FieldError(f"{path}.value", "must be empty when operator is Exists"))
    elif operator == "Equal" and not toleration.key:
        errors.append(FieldError(f"{path}.operator", "must be Exists when key is empty"))
    if toleration.effect and toleration.effect not in TAINT_EFFECTS:
        errors.append(FieldError(f"{path}.effect", f"{toleration.effect!r} is not one of {', '.join(TAINT_EFFECTS)}"))
    return errors


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
        errors += _validate_taint(taint, f"spec.nodeTaints[{i}]")
        if (taint.key, taint.effect) in seen:
            errors.append(
                FieldError(f"spec.nodeTaints[{i}]", f"duplicate taint key {taint.key!r} with effect {taint.effect}")
            )
        seen.add((taint.key, taint.effect))
    for i, toleration in enumerate(spec.tolerations):
        errors += _validate_toleration(toleration, f"spec.tolerations[{i}]")
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


_VALIDATORS: dict[type[Resource], Any] = {
    ClusterQueue: validate_cluster_queue,
    Cohort: validate_cohort,
    LocalQueue: validate_local_queue,
    ResourceFlavor: validate_resource_flavor,
    Topology: validate_topology,
    WorkloadPriorityClass: validate_workload_priority_class,
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
