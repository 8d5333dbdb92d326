"""`trainyard admit`'s admission checks.

A workload whose quota the engine reserved is QuotaReserved until every admission check of its
ClusterQueue (for the flavors it got) is Ready; the states come from the input Workload's
``status.admissionChecks`` (none given: Pending, as no check controller runs in a dry run). A
Rejected check deactivates the workload and frees its quota, as Kueue does. The rules are
the engine's (``quota_reserved_verdicts``); this module applies them to the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.api.kueue import AdmissionCheckState, Workload
    from scheduler.engine import AdmissionEngine, CheckVerdict

GivenStates = dict[str, dict[str, "AdmissionCheckState"]]


def given_states(workloads: list[Workload]) -> GivenStates:
    return {
        f"{w.namespace or 'default'}/{w.name}": {s.name: s for s in w.status.admission_checks}
        for w in workloads
        if w.status.admission_checks
    }


def deactivate_rejected(
    engine: AdmissionEngine, given: GivenStates, rejected: dict[str, CheckVerdict], now: float
) -> bool:
    """Free the quota of admitted workloads a check rejected; True if any was (run cycles again)."""
    from scheduler.engine import quota_reserved_verdicts

    verdicts = quota_reserved_verdicts(engine.all_workloads(), engine.cluster_queue_objects(), given)
    newly = {key: v for key, v in verdicts.items() if v.state == "Rejected" and key not in rejected}
    for key, verdict in newly.items():
        engine.finish(key, now)
        rejected[key] = verdict
    return bool(newly)


def _states(verdict: CheckVerdict) -> list[dict[str, str]]:
    return [{"name": s.name, "state": s.state, "message": s.message} for s in verdict.checks]


def annotate(
    summary: dict[str, Any], engine: AdmissionEngine, given: GivenStates, rejected: dict[str, CheckVerdict]
) -> None:
    """Admitted -> QuotaReserved where checks are not all Ready; Rejected -> Deactivated; counts per queue."""
    from scheduler.engine import quota_reserved_verdicts

    verdicts = quota_reserved_verdicts(engine.all_workloads(), engine.cluster_queue_objects(), given)
    reserved_per_queue: dict[str, int] = {}
    for workload in summary["workloads"]:
        key = f"{workload['namespace']}/{workload['name']}"
        if key in rejected:
            workload["status"] = "Deactivated"
            workload["reason"] = rejected[key].waiting_reason
            workload["admissionChecks"] = _states(rejected[key])
            continue
        verdict = verdicts.get(key)
        if verdict is None:
            continue
        if verdict.checks:
            workload["admissionChecks"] = _states(verdict)
        if verdict.state == "QuotaReserved":
            workload["status"] = "QuotaReserved"
            workload["reason"] = verdict.waiting_reason
            queue = workload["clusterQueue"]
            reserved_per_queue[queue] = reserved_per_queue.get(queue, 0) + 1
    for queue in summary["clusterQueues"]:
        reserved = reserved_per_queue.get(queue["name"], 0)
        queue["quotaReserved"] = reserved
        queue["admitted"] -= reserved


def check_report(engine: AdmissionEngine) -> list[dict[str, Any]]:
    """Every AdmissionCheck given: its controller, and whether it is active (with why not)."""
    registry = engine.admission_checks()
    report = []
    for name, check in sorted(registry.checks.items()):
        reason = registry.inactive_reason(check)
        report.append(
            {
                "name": name,
                "controllerName": check.spec.controller_name,
                "active": reason is None,
                "reason": reason or "",
            }
        )
    return report
