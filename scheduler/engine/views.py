"""Read-only reports of the engine's state: per workload and per ClusterQueue, in plain data.

The CLI prints them, the controllers turn them into status fields; amounts are rendered as
Kubernetes quantities.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtimes.k8s.quantity import format_amount
from scheduler.engine.workloads import WorkloadInfo, WorkloadState

if TYPE_CHECKING:
    from scheduler.engine.core import EngineCore
    from scheduler.engine.quota import FlavorResource


def _nested(amounts: dict[FlavorResource, int]) -> dict[str, dict[str, str]]:
    nested: dict[str, dict[str, str]] = {}
    for (flavor, resource), amount in sorted(amounts.items()):
        if amount:
            nested.setdefault(flavor, {})[resource] = format_amount(resource, amount)
    return nested


def workload_status(workload: WorkloadInfo) -> str:
    """Admitted | Pending | Preempted | Finished | Inadmissible, as `trainyard admit` reports it."""
    if workload.state is WorkloadState.ADMITTED:
        return "Admitted"
    if workload.state is WorkloadState.FINISHED:
        return "Finished"
    if workload.state in (WorkloadState.INADMISSIBLE, WorkloadState.DEACTIVATED):
        return "Inadmissible"
    if workload.evictions and workload.evictions[-1][1] == "Preempted":
        return "Preempted"
    return "Pending"


def waiting_reason(engine: EngineCore, workload: WorkloadInfo) -> str:
    """Why a workload is where it is, in words: the engine's reason, an inactive ClusterQueue's,
    the reason its kind was parked with, or its place in the line."""
    reason = workload.reason
    cq = engine.cluster_queue_of(workload)
    if workload.state is WorkloadState.PENDING and cq is not None:
        if not cq.active:
            reason = f"ClusterQueue {cq.name} is inactive: {cq.inactive_reason}"
        elif not reason:
            reason = cq.queue.park_reason(workload) or "waiting for its turn in the queue"
    return reason


def workload_report(engine: EngineCore, workload: WorkloadInfo) -> dict[str, Any]:
    reason = waiting_reason(engine, workload)
    report: dict[str, Any] = {
        "namespace": workload.namespace,
        "name": workload.name,
        "status": workload_status(workload),
        "clusterQueue": workload.cluster_queue,
        "priority": workload.priority,
        "flavors": {},
        "reason": reason,
    }
    admission = workload.admission
    if admission is not None:
        report["flavors"] = admission.flavors
        report["borrowed"] = _nested(admission.borrowed)
        report["counts"] = {p.name: p.count for p in admission.pod_sets}
        if admission.placements:
            report["placement"] = {
                flavor: placement.to_dict() if hasattr(placement, "to_dict") else str(placement)
                for flavor, placement in admission.placements.items()
            }
    if workload.evictions:
        report["evictions"] = [
            {"time": when, "reason": why, "message": message} for when, why, message in workload.evictions
        ]
    return report


def cluster_queue_report(engine: EngineCore) -> list[dict[str, Any]]:
    reports = []
    for name, cq in sorted(engine.model.cluster_queues.items()):
        borrowed = {fr: cq.node.borrowed(fr) for fr in cq.node.usage}
        reports.append(
            {
                "name": name,
                "cohort": cq.cohort,
                "active": cq.active,
                "usage": _nested(cq.node.usage),
                "borrowed": _nested(borrowed),
                "pending": sum(
                    1 for w in engine.workloads.values() if w.cluster_queue == name and w.state is WorkloadState.PENDING
                ),
                "admitted": len(cq.admitted),
            }
        )
    return reports


def report(engine: EngineCore) -> dict[str, Any]:
    """The whole picture: ``{"workloads": [...], "clusterQueues": [...]}``."""
    workloads = sorted(engine.workloads.values(), key=lambda w: (w.namespace, w.name))
    return {
        "workloads": [workload_report(engine, w) for w in workloads],
        "clusterQueues": cluster_queue_report(engine),
    }
