"""`describe`: the engine's whole story of one workload.

Its queue and place in line, why the engine does not admit it now (each flavor tried, the
borrowing it would need, the preemption it would need and whether policy allows it), the
preemptions and evictions it suffered (this evaluation's and those its status records), and,
when the caller ran one, an estimate of when it could start if nothing new arrives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.engine import (
    AdmissionExplanation,
    WorkloadInfo,
    explain_admission,
    workload_report,
    workload_status,
)
from scheduler.queues.pending import PendingWorkload, find_pending, total_requests
from scheduler.queues.state import QueueState


@dataclass(frozen=True)
class Interruption:
    """A preemption or eviction the workload went through."""

    kind: str  # Preempted | Evicted
    reason: str
    message: str
    when: str  # RFC 3339 from the status, or "this evaluation"
    source: str  # status | engine

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "message": self.message, "when": self.when}


@dataclass(frozen=True)
class StartEstimate:
    """When the workload could start, from a simulation of the current queues with no arrivals."""

    seconds_from_now: float | None  # None: not within the simulated horizon
    assumption: str  # what the simulation assumed (durations, horizon)

    def to_dict(self) -> dict[str, Any]:
        return {
            "secondsFromNow": None if self.seconds_from_now is None else round(self.seconds_from_now, 1),
            "assumption": self.assumption,
        }


@dataclass(frozen=True)
class WorkloadStory:
    key: str
    status: str
    local_queue: str
    cluster_queue: str | None
    priority: int
    requests: dict[str, str]
    pending: PendingWorkload | None
    admission: dict[str, Any] | None  # flavors, borrowed, counts for an admitted workload
    explanation: AdmissionExplanation | None
    interruptions: list[Interruption] = field(default_factory=list)
    admitted_by_evaluation: bool = False
    estimate: StartEstimate | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.key,
            "status": self.status,
            "localQueue": self.local_queue,
            "clusterQueue": self.cluster_queue,
            "priority": self.priority,
            "requests": self.requests,
            "positionInClusterQueue": self.pending.position_in_cluster_queue if self.pending else None,
            "positionInLocalQueue": self.pending.position_in_local_queue if self.pending else None,
            "reason": self.pending.reason if self.pending else None,
            "admission": self.admission,
            "admittedByThisEvaluation": self.admitted_by_evaluation,
            "explanation": self.explanation.to_dict() if self.explanation else None,
            "interruptions": [i.to_dict() for i in self.interruptions],
            "estimatedStart": self.estimate.to_dict() if self.estimate else None,
        }


def _interruptions(workload: WorkloadInfo) -> list[Interruption]:
    found: list[Interruption] = []
    source = workload.source
    if source is not None:
        for kind in ("Preempted", "Evicted"):
            condition = source.status.condition(kind)
            if condition is not None and condition.status == "True":
                found.append(
                    Interruption(
                        kind,
                        condition.reason or "",
                        condition.message or "",
                        condition.last_transition_time or "",
                        "status",
                    )
                )
        stats = (source.status.to_dict().get("schedulingStats") or {}).get("evictions") or []
        for entry in stats:
            if isinstance(entry, dict):
                found.append(
                    Interruption(
                        "Evicted",
                        str(entry.get("reason", "")),
                        f"{entry.get('count', 0)} time(s)"
                        + (f", {entry['underlyingCause']}" if entry.get("underlyingCause") else ""),
                        "",
                        "status",
                    )
                )
    for _, reason, message in workload.evictions:
        kind = "Preempted" if reason == "Preempted" else "Evicted"
        found.append(Interruption(kind, reason, message, "this evaluation", "engine"))
    return found


def describe_workload(state: QueueState, key: str, estimate: StartEstimate | None = None) -> WorkloadStory | None:
    """The story of ``key`` (``namespace/name``), or None if the engine does not know it."""
    engine = state.engine
    workload = engine.workload(key)
    if workload is None:
        return None
    admission: dict[str, Any] | None = None
    explanation = None
    pending = None
    if workload.admission is not None:
        report = workload_report(engine, workload)
        admission = {k: report[k] for k in ("flavors", "borrowed", "counts") if k in report}
    else:
        pending = find_pending(state, key)
        explanation = explain_admission(engine, key, state.now)
    return WorkloadStory(
        key=key,
        status=workload_status(workload),
        local_queue=workload.local_queue,
        cluster_queue=workload.cluster_queue,
        priority=workload.priority,
        requests=total_requests(workload),
        pending=pending,
        admission=admission,
        explanation=explanation,
        interruptions=_interruptions(workload),
        admitted_by_evaluation=key in state.admitted_now,
        estimate=estimate,
    )
