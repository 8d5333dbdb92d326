"""Warnings for a person about Kueue documents: v1beta1 spellings v1beta2 renamed, and fields
trainyard keeps but does not act on. Read by the webhook and the CLI; never changes a document."""

from __future__ import annotations

from typing import Any

from scheduler.api.kueue_versions import KUEUE_V1BETA1, KUEUE_V1BETA2


def no_effect_fields(spec: dict[str, Any]) -> list[str]:
    """ClusterQueue fields Kueue acts on that trainyard keeps but does not act on, each with why."""
    found = []
    scope = spec.get("admissionScope")
    if isinstance(scope, dict):
        found.append(
            f"spec.admissionScope (admissionMode {scope.get('admissionMode', '?')}) has no effect here: trainyard "
            "orders a queue's workloads by priority and creation time, not by its LocalQueues' recent usage "
            "(Kueue's admission fair sharing; with no usage history Kueue's order is the same)"
        )
    policy = spec.get("concurrentAdmissionPolicy")
    if isinstance(policy, dict):
        mode = (policy.get("migration") or {}).get("mode", "?") if isinstance(policy.get("migration"), dict) else "?"
        found.append(
            f"spec.concurrentAdmissionPolicy (migration mode {mode}) has no effect here: trainyard admits each "
            "workload once, on the first flavor that fits, and keeps no variants of it trying the preferred "
            "flavors (Kueue's alpha ConcurrentAdmission)"
        )
    found += _checks_on_unlisted_flavors(spec)
    return found


def _checks_on_unlisted_flavors(spec: dict[str, Any]) -> list[str]:
    """Admission checks narrowed to flavors the ClusterQueue does not list: never run (Kueue accepts them)."""
    listed = {
        flavor.get("name")
        for group in spec.get("resourceGroups") or ()
        if isinstance(group, dict)
        for flavor in group.get("flavors") or ()
        if isinstance(flavor, dict)
    }
    strategy = spec.get("admissionChecksStrategy")
    rules = strategy.get("admissionChecks") if isinstance(strategy, dict) else None
    found = []
    for i, rule in enumerate(rules if isinstance(rules, list) else ()):
        if not isinstance(rule, dict):
            continue
        for j, name in enumerate(rule.get("onFlavors") or ()):
            if name not in listed:
                found.append(
                    f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]: flavor {name!r} is not one of "
                    f"this ClusterQueue's flavors {sorted(str(f) for f in listed)}, so check {rule.get('name')!r} "
                    "never runs for it"
                )
    return found


def deprecated_fields(document: dict[str, Any]) -> list[str]:
    """v1beta1 spellings in ``document`` that v1beta2 renamed, and fields that have no effect
    (:func:`no_effect_fields`), as warnings for a person (the webhook's and the CLI's)."""
    spec = document.get("spec") or {}
    kind = document.get("kind")
    found: list[str] = []
    if kind == "ClusterQueue" and isinstance(spec, dict):
        if "cohort" in spec:
            found.append("spec.cohort is deprecated; use spec.cohortName (kueue.x-k8s.io/v1beta2)")
        if "admissionChecks" in spec:
            found.append("spec.admissionChecks is deprecated; use spec.admissionChecksStrategy.admissionChecks")
    if kind == "ClusterQueue" and isinstance(spec, dict):
        found += no_effect_fields(spec)
    if kind == "Workload" and isinstance(spec, dict) and "priorityClassName" in spec:
        found.append("spec.priorityClassName is deprecated; use spec.priorityClassRef")
    if document.get("apiVersion") == KUEUE_V1BETA1:
        found.append(f"{KUEUE_V1BETA1} {kind} is deprecated; use {KUEUE_V1BETA2}")
    return found
