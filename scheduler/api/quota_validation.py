"""Kueue's rules for quota objects: ClusterQueue, Cohort (their resource groups) and LocalQueue.

From Kueue's ``pkg/webhooks`` validators and the CEL rules of ``apis/kueue/v1beta2``.
"""

from __future__ import annotations

from runtimes.errors import FieldError
from scheduler.api.field_rules import quantity_non_negative, validate_fair_sharing, validate_label_selector
from scheduler.api.kueue import ClusterQueue, Cohort, FlavorQuotas, LocalQueue, ResourceGroup, ResourceQuota
from scheduler.api.names import dns_subdomain_error, qualified_name_error

MAX_RESOURCE_GROUPS = 16
MAX_FLAVORS_TOTAL = 256
MAX_COVERED_RESOURCES_TOTAL = 256
MAX_FLAVOR_RESOURCE_COMBINATIONS = 512


def _quota_errors(
    qbase: str, quota: ResourceQuota, *, has_cohort: bool, limits_reason: str, check_lending: bool
) -> list[FieldError]:
    """One flavor's quota for one resource: non-negative, limits only in a cohort, lending within nominal."""
    errors = quantity_non_negative(quota.nominal_quota, f"{qbase}.nominalQuota")
    errors += quantity_non_negative(quota.borrowing_limit, f"{qbase}.borrowingLimit")
    errors += quantity_non_negative(quota.lending_limit, f"{qbase}.lendingLimit")
    for field, limit in (("borrowingLimit", quota.borrowing_limit), ("lendingLimit", quota.lending_limit)):
        if limit is not None and not has_cohort:
            errors.append(FieldError(f"{qbase}.{field}", f"must be nil when {limits_reason}"))
    if check_lending and quota.lending_limit is not None and quota.lending_limit.value > quota.nominal_quota.value:
        errors.append(
            FieldError(
                f"{qbase}.lendingLimit",
                f"must be less than or equal to nominalQuota ({quota.nominal_quota.raw}), "
                f"got {quota.lending_limit.raw}",
            )
        )
    return errors


def _group_shape_errors(base: str, group: ResourceGroup, g: int, seen_resources: dict[str, int]) -> list[FieldError]:
    """A group's own shape: not empty, bounded combinations, valid resource names covered once."""
    errors: list[FieldError] = []
    if not group.covered_resources:
        errors.append(FieldError(f"{base}.coveredResources", "must list at least one resource"))
    if not group.flavors:
        errors.append(FieldError(f"{base}.flavors", "must list at least one flavor"))
    combinations = len(group.flavors) * len(group.covered_resources)
    if combinations > MAX_FLAVOR_RESOURCE_COMBINATIONS:
        errors.append(
            FieldError(
                base, f"has {combinations} flavor-resource combinations; at most {MAX_FLAVOR_RESOURCE_COMBINATIONS}"
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
    return errors


def _flavor_errors(
    fbase: str, flavor: FlavorQuotas, group: ResourceGroup, g: int, seen_flavors: dict[str, int]
) -> list[FieldError]:
    """A flavor's name (valid, listed once across groups) and its resources (the covered ones, in order)."""
    errors: list[FieldError] = []
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
                f"must list exactly the coveredResources {group.covered_resources} in the same order, got {names}",
            )
        )
    return errors


def _total_errors(groups: list[ResourceGroup]) -> list[FieldError]:
    errors: list[FieldError] = []
    total_flavors = sum(len(group.flavors) for group in groups)
    total_resources = sum(len(group.covered_resources) for group in groups)
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
    for g, group in enumerate(groups):
        base = f"spec.resourceGroups[{g}]"
        errors += _group_shape_errors(base, group, g, seen_resources)
        for f, flavor in enumerate(group.flavors):
            fbase = f"{base}.flavors[{f}]"
            errors += _flavor_errors(fbase, flavor, group, g, seen_flavors)
            for q, quota in enumerate(flavor.resources):
                errors += _quota_errors(
                    f"{fbase}.resources[{q}]",
                    quota,
                    has_cohort=has_cohort,
                    limits_reason=limits_reason,
                    check_lending=check_lending,
                )
    return errors + _total_errors(groups)


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
    # onFlavors naming a flavor the queue does not list is accepted, as Kueue's webhook accepts it
    # (site/static/examples/admin/minimal-cq.yaml); kueue_deprecations.no_effect_fields warns about it.
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
