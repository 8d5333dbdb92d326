"""The engine's decisions as Kueue writes them on a Workload's status.

Each function returns the merge patch for ``status`` (``None`` removes a field) or ``None`` when
the cached object already says it; the caller sends it with the resourceVersion it read, so a
decision lands only on the revision it was made from. Reasons are Kueue's (apis/kueue/v1beta2
workload_types.go): QuotaReserved/Admitted on admission, Pending and NoReservation while waiting,
Evicted with Preempted/PodsReadyTimeout/NodeFailures, Preempted with InClusterQueue and the
cohort reasons, Finished with Succeeded/Failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtimes.k8s.quantity import format_amount
from scheduler.api.topology_assignment import encode_topology_assignment, stored_levels
from scheduler.controllers.conditions import conditions_of, find_condition, rfc3339, set_condition
from scheduler.engine import Admission

QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
PODS_READY = "PodsReady"
FINISHED = "Finished"
REQUEUED = "Requeued"


def _generation(document: Mapping[str, Any]) -> int | None:
    value = (document.get("metadata") or {}).get("generation")
    return int(value) if isinstance(value, int) else None


def topology_assignments(admission: Admission) -> dict[str, dict[str, Any]]:
    """Per pod set, Kueue's compressed topologyAssignment of its gang placement (TAS flavors only).

    Domains are listed in rank order (consecutive pods on one domain form one entry), which is
    the order the ungater assigns ranks in.
    """
    found: dict[str, dict[str, Any]] = {}
    for placement in admission.placements.values():
        for pod_set in getattr(placement, "pod_sets", ()):
            domains: list[tuple[list[str], int]] = []
            for node in pod_set.nodes:
                values = [pod_set.node_values[node][k] for k in pod_set.value_positions]
                if domains and domains[-1][0] == values:
                    domains[-1] = (values, domains[-1][1] + 1)
                else:
                    domains.append((values, 1))
            levels, stored = stored_levels(pod_set.topology_levels, domains)
            found[pod_set.name] = encode_topology_assignment(levels, stored)
    return found


def admission_document(admission: Admission) -> dict[str, Any]:
    """``status.admission``: clusterQueue and, per pod set, flavors, resourceUsage, count, topologyAssignment."""
    placed = topology_assignments(admission)
    assignments = []
    for pod_set in admission.pod_sets:
        usage = {resource: format_amount(resource, amount) for (_, resource), amount in sorted(pod_set.usage.items())}
        entry: dict[str, Any] = {
            "name": pod_set.name,
            "flavors": dict(sorted(pod_set.flavors.items())),
            "resourceUsage": usage,
            "count": pod_set.count,
        }
        if pod_set.name in placed:
            entry["topologyAssignment"] = placed[pod_set.name]
        assignments.append(entry)
    return {"clusterQueue": admission.cluster_queue, "podSetAssignments": assignments}


def admitted_patch(document: Mapping[str, Any], admission: Admission, now: float) -> dict[str, Any]:
    """Quota reserved and admitted (no admission checks): admission plus QuotaReserved and Admitted True."""
    conditions = conditions_of(document)
    generation = _generation(document)
    cq = admission.cluster_queue
    set_condition(
        conditions, QUOTA_RESERVED, True, "QuotaReserved", f"Quota reserved in ClusterQueue {cq}",
        generation=generation, now=now,
    )  # fmt: skip
    set_condition(conditions, ADMITTED, True, "Admitted", "The workload is admitted", generation=generation, now=now)
    for kind in (EVICTED, PREEMPTED):
        previous = find_condition(conditions, kind)
        if previous is not None and previous.get("status") == "True":
            message = f"Previously: {previous.get('message', '')}"
            set_condition(conditions, kind, False, "QuotaReserved", message, generation=generation, now=now)
    return {"admission": admission_document(admission), "conditions": conditions}


def pending_patch(document: Mapping[str, Any], message: str, now: float) -> dict[str, Any] | None:
    """QuotaReserved=False with the reason in words; None when the cached condition says the same."""
    conditions = conditions_of(document)
    changed = set_condition(
        conditions, QUOTA_RESERVED, False, "Pending", message, generation=_generation(document), now=now
    )
    return {"conditions": conditions} if changed else None


def evicted_patch(
    document: Mapping[str, Any],
    reason: str,
    message: str,
    now: float,
    *,
    preempted_reason: str | None = None,
    requeue_at: float | None = None,
) -> dict[str, Any]:
    """Evicted (and Preempted): admission removed, quota released, requeueState counted."""
    conditions = conditions_of(document)
    generation = _generation(document)
    set_condition(conditions, EVICTED, True, reason, message, generation=generation, now=now)
    if preempted_reason is not None:
        set_condition(conditions, PREEMPTED, True, preempted_reason, message, generation=generation, now=now)
    set_condition(conditions, QUOTA_RESERVED, False, "Pending", message, generation=generation, now=now)
    if find_condition(conditions, ADMITTED) is not None:
        set_condition(conditions, ADMITTED, False, "NoReservation", "The workload has no reservation",
                      generation=generation, now=now)  # fmt: skip
    if find_condition(conditions, PODS_READY) is not None:
        set_condition(conditions, PODS_READY, False, "WaitForStart", "Not all pods are ready or succeeded",
                      generation=generation, now=now)  # fmt: skip
    previous = (document.get("status") or {}).get("requeueState") or {}
    requeue_state: dict[str, Any] = {"count": int(previous.get("count") or 0) + 1}
    if requeue_at is not None:
        requeue_state["requeueAt"] = rfc3339(requeue_at)
    return {"admission": None, "conditions": conditions, "requeueState": requeue_state}


def finished_patch(document: Mapping[str, Any], succeeded: bool, message: str, now: float) -> dict[str, Any] | None:
    conditions = conditions_of(document)
    reason = "Succeeded" if succeeded else "Failed"
    changed = set_condition(conditions, FINISHED, True, reason, message, generation=_generation(document), now=now)
    return {"conditions": conditions} if changed else None


def pods_ready_patch(document: Mapping[str, Any], ready: bool, now: float) -> dict[str, Any] | None:
    conditions = conditions_of(document)
    if ready:
        reason, message = "Started", "All pods reached readiness and the workload is running"
    else:
        reason, message = "WaitForStart", "Not all pods are ready or succeeded"
    changed = set_condition(conditions, PODS_READY, ready, reason, message, generation=_generation(document), now=now)
    return {"conditions": conditions} if changed else None
