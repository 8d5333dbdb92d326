"""ClusterQueue and LocalQueue status as Kueue writes it, read off the engine.

Kueue's ClusterQueue controller writes ``pendingWorkloads`` (waiting in the queue, inadmissible
ones included), ``reservingWorkloads`` (quota reserved), ``admittedWorkloads`` (reserved and every
admission check Ready), ``flavorsReservation`` and ``flavorsUsage`` (per flavor of the spec and
each covered resource: ``total`` and ``borrowed``, for the reserving and the admitted workloads)
and the ``Active`` condition (``Ready``, or why not: FlavorNotFound, TopologyNotFound,
AdmissionCheckNotFound, ..., Stopped). Its LocalQueue controller writes the same counts and
usage for the LocalQueue's own workloads (``flavorsReservation``, ``flavorsUsage``: totals only)
and an ``Active`` condition of its own.

Every figure is the engine's: its queues say what waits, its admitted sets and quota nodes what
is reserved and borrowed, ``quota_reserved_verdicts`` which reservations are admitted, and the
compiled ClusterQueue why a queue is inactive. Pure: nothing here reads the API server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtimes.k8s.quantity import format_amount
from scheduler.api.kueue import AdmissionCheckState
from scheduler.engine import (
    AdmissionEngine,
    ClusterQueueInfo,
    FlavorResource,
    WorkloadInfo,
    WorkloadState,
    quota_reserved_verdicts,
)

ACTIVE = "Active"
# Kueue's words (pkg/cache clusterqueue.go, pkg/controller/core/localqueue_controller.go)
CAN_ADMIT = "Can admit new workloads"
LOCAL_QUEUE_READY = "Can submit new workloads to localQueue"
LOCAL_QUEUE_STOPPED = "LocalQueue is stopped"
CLUSTER_QUEUE_INACTIVE = "Can't submit new workloads to clusterQueue"
_WAITING = (WorkloadState.PENDING, WorkloadState.INADMISSIBLE)
_REASON_CODE = re.compile(r"\s*\(([A-Z][A-Za-z]+)\)$")

CheckStates = Mapping[str, Mapping[str, AdmissionCheckState]]  # workload key -> check name -> state


@dataclass(frozen=True)
class ActiveCondition:
    """The ``Active`` condition's status, reason and message."""

    status: str  # "True" | "False"
    reason: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"type": ACTIVE, "status": self.status, "reason": self.reason, "message": self.message}


def cluster_queue_active(info: ClusterQueueInfo) -> ActiveCondition:
    """Ready, or the engine's reason the queue admits nothing, with Kueue's reason code."""
    why = info.inactive_reason
    if why is None:
        return ActiveCondition("True", "Ready", CAN_ADMIT)
    found = _REASON_CODE.search(why)
    reason = found.group(1) if found else "Unknown"
    text = why[: found.start()] if found else why
    return ActiveCondition("False", reason, f"Can't admit new workloads: {text}.")


def local_queue_active(engine: AdmissionEngine, namespace: str, name: str) -> ActiveCondition | None:
    """As Kueue's LocalQueue controller says it: stopped, no ClusterQueue, an inactive one, or Ready."""
    queue = engine.local_queue(namespace, name)
    if queue is None:
        return None
    if queue.spec.stop_policy != "None":
        return ActiveCondition("False", "Stopped", LOCAL_QUEUE_STOPPED)
    info = engine.cluster_queue(queue.spec.cluster_queue)
    if info is None:
        return ActiveCondition("False", "ClusterQueueDoesNotExist", CLUSTER_QUEUE_INACTIVE)
    if not info.active:
        return ActiveCondition("False", "ClusterQueueIsInactive", CLUSTER_QUEUE_INACTIVE)
    return ActiveCondition("True", "Ready", LOCAL_QUEUE_READY)


def _waiting_in(engine: AdmissionEngine, workload: WorkloadInfo) -> str | None:
    """The ClusterQueue a waiting workload counts as pending in (its LocalQueue's), or None."""
    if workload.state not in _WAITING or not workload.active:
        return None
    if workload.cluster_queue:
        return workload.cluster_queue
    queue = engine.local_queue(workload.namespace, workload.local_queue)
    return queue.spec.cluster_queue if queue is not None else None


@dataclass
class QueueTally:
    """Counts and usage of one queue's workloads."""

    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    reserved_usage: dict[FlavorResource, int] | None = None
    admitted_usage: dict[FlavorResource, int] | None = None

    def add_reserved(self, workload: WorkloadInfo, admitted: bool) -> None:
        assert workload.admission is not None
        self.reserving += 1
        self.admitted += admitted
        for fr, amount in workload.admission.usage.items():
            reserved = self.reserved_usage = self.reserved_usage or {}
            reserved[fr] = reserved.get(fr, 0) + amount
            if admitted:
                used = self.admitted_usage = self.admitted_usage or {}
                used[fr] = used.get(fr, 0) + amount


def _admitted_keys(engine: AdmissionEngine, given: CheckStates) -> set[str]:
    verdicts = quota_reserved_verdicts(engine.all_workloads(), engine.cluster_queue_objects(), given)
    return {key for key, verdict in verdicts.items() if verdict.state == "Admitted"}


def tally_queues(engine: AdmissionEngine, given: CheckStates) -> tuple[dict[str, QueueTally], dict[str, QueueTally]]:
    """Per ClusterQueue and per LocalQueue ("namespace/name"): counts and usage, in one pass."""
    admitted = _admitted_keys(engine, given)
    by_cq: dict[str, QueueTally] = {}
    by_lq: dict[str, QueueTally] = {}
    for workload in engine.all_workloads():
        lq = by_lq.setdefault(f"{workload.namespace}/{workload.local_queue}", QueueTally())
        if workload.state is WorkloadState.ADMITTED and workload.admission is not None:
            lq.add_reserved(workload, workload.key in admitted)
            by_cq.setdefault(workload.admission.cluster_queue, QueueTally()).add_reserved(
                workload, workload.key in admitted
            )
            continue
        waiting_in = _waiting_in(engine, workload)
        if waiting_in is not None:
            lq.pending += 1
            by_cq.setdefault(waiting_in, QueueTally()).pending += 1
    return by_cq, by_lq


def _flavor_lines(
    info: ClusterQueueInfo, usage: dict[FlavorResource, int], borrowed: dict[FlavorResource, int] | None
) -> list[dict[str, Any]]:
    """Every flavor of the spec with each covered resource, in the spec's order (as Kueue lists them)."""
    lines = []
    for group in info.groups:
        for flavor in group.flavors:
            resources = []
            for resource in group.resources:
                entry = {"name": resource, "total": format_amount(resource, usage.get((flavor, resource), 0))}
                if borrowed is not None:
                    entry["borrowed"] = format_amount(resource, borrowed.get((flavor, resource), 0))
                resources.append(entry)
            lines.append({"name": flavor, "resources": resources})
    return lines


def _borrowed(
    info: ClusterQueueInfo, reserved: dict[FlavorResource, int], admitted: dict[FlavorResource, int]
) -> tuple[dict[FlavorResource, int], dict[FlavorResource, int]]:
    """What the reservations borrow (the quota tree's figure) and the part of it the admitted
    workloads account for (all of it when every reservation is admitted)."""
    node = info.node
    of_reserved = {fr: node.borrowed(fr) for fr in reserved}
    of_admitted = {
        fr: max(0, admitted.get(fr, 0) - (reserved[fr] - of_reserved[fr])) for fr in reserved if of_reserved[fr]
    }
    return of_reserved, of_admitted


def cluster_queue_status(engine: AdmissionEngine, name: str, tally: Mapping[str, QueueTally]) -> dict[str, Any] | None:
    """The status fields Kueue's ClusterQueue controller owns (conditions: only ``Active``)."""
    info = engine.cluster_queue(name)
    if info is None:
        return None
    counts = tally.get(name) or QueueTally()
    reserved = counts.reserved_usage or {}
    admitted = counts.admitted_usage or {}
    borrowed_reserved, borrowed_admitted = _borrowed(info, reserved, admitted)
    return {
        "pendingWorkloads": counts.pending,
        "reservingWorkloads": counts.reserving,
        "admittedWorkloads": counts.admitted,
        "flavorsReservation": _flavor_lines(info, reserved, borrowed_reserved),
        "flavorsUsage": _flavor_lines(info, admitted, borrowed_admitted),
        "conditions": [cluster_queue_active(info).to_dict()],
    }


def local_queue_status(
    engine: AdmissionEngine, namespace: str, name: str, tally: Mapping[str, QueueTally]
) -> dict[str, Any] | None:
    """The status fields Kueue's LocalQueue controller owns: counts, usage of its ClusterQueue's
    flavors by its own workloads, and ``Active``."""
    active = local_queue_active(engine, namespace, name)
    queue = engine.local_queue(namespace, name)
    if active is None or queue is None:
        return None
    counts = tally.get(f"{namespace}/{name}") or QueueTally()
    info = engine.cluster_queue(queue.spec.cluster_queue)
    reserved = counts.reserved_usage or {}
    admitted = counts.admitted_usage or {}
    return {
        # a stopped LocalQueue is out of the queueing system: Kueue counts nothing pending in it
        "pendingWorkloads": counts.pending if active.reason != "Stopped" else 0,
        "reservingWorkloads": counts.reserving,
        "admittedWorkloads": counts.admitted,
        "flavorsReservation": _flavor_lines(info, reserved, None) if info is not None else [],
        "flavorsUsage": _flavor_lines(info, admitted, None) if info is not None else [],
        "conditions": [active.to_dict()],
    }
