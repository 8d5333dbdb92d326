"""Pending workloads in admission order, with their places in the LocalQueue and ClusterQueue.

Positions count from 0 in data, as Kueue's visibility API reports them (``positionInClusterQueue``,
``positionInLocalQueue``): a ClusterQueue's order is its queue's (higher priority first, then the
queue-order timestamp, then UID), and a workload's position in its LocalQueue is its rank among
that LocalQueue's workloads in the same order. In words for people they count from 1 (the next
to be tried is 1): ``place_for_people`` is the one conversion, used by the tables, ``describe``
and the Workload's pending message alike.
Workloads that wait outside any ClusterQueue (no LocalQueue, a backoff after an eviction) are
listed after the queued ones, without a position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from runtimes.k8s.quantity import format_amount
from scheduler.engine import AdmissionEngine, WorkloadInfo, WorkloadState, waiting_reason
from scheduler.queues.state import QueueState


@dataclass(frozen=True)
class PendingWorkload:
    namespace: str
    name: str
    local_queue: str
    cluster_queue: str | None
    position_in_cluster_queue: int | None
    position_in_local_queue: int | None
    priority: int
    created: float  # epoch seconds
    age_seconds: float
    state: str  # Pending | Backoff | Inadmissible
    # (requests: resource -> total quantity over every pod set, the engine's reason in words),
    # worked out on first use: a page of a 50,000-workload listing explains only its own rows.
    explain: Callable[[], tuple[dict[str, str], str]] = field(repr=False, compare=False)

    @cached_property
    def _explained(self) -> tuple[dict[str, str], str]:
        return self.explain()

    @property
    def requests(self) -> dict[str, str]:
        return self._explained[0]

    @property
    def reason(self) -> str:
        return self._explained[1]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "localQueue": self.local_queue,
            "clusterQueue": self.cluster_queue,
            "positionInClusterQueue": self.position_in_cluster_queue,
            "positionInLocalQueue": self.position_in_local_queue,
            "priority": self.priority,
            "requests": self.requests,
            "ageSeconds": round(self.age_seconds, 1),
            "state": self.state,
            "reason": self.reason,
        }


def place_for_people(position: int | None) -> str:
    """A 0-based position (the visibility API's) as people count it, from 1; "-" for none."""
    return "-" if position is None else str(position + 1)


def total_requests(workload: WorkloadInfo) -> dict[str, str]:
    totals: dict[str, int] = {}
    for pod_set in workload.pod_sets:
        for resource, amount in pod_set.total().items():
            if resource != "pods" and amount:
                totals[resource] = totals.get(resource, 0) + amount
    return {resource: format_amount(resource, amount) for resource, amount in sorted(totals.items())}


def _explain(engine: AdmissionEngine, workload: WorkloadInfo) -> tuple[dict[str, str], str]:
    return total_requests(workload), waiting_reason(engine, workload)


def _entry(
    engine: AdmissionEngine, workload: WorkloadInfo, now: float, in_cq: int | None, in_lq: int | None
) -> PendingWorkload:
    if workload.state is WorkloadState.PENDING:
        state = "Backoff" if workload.requeue_at is not None and workload.cluster_queue is None else "Pending"
    else:
        state = "Inadmissible"
    return PendingWorkload(
        namespace=workload.namespace,
        name=workload.name,
        local_queue=workload.local_queue,
        cluster_queue=workload.cluster_queue,
        position_in_cluster_queue=in_cq,
        position_in_local_queue=in_lq,
        priority=workload.priority,
        created=workload.created,
        age_seconds=max(0.0, now - workload.created),
        state=state,
        explain=partial(_explain, engine, workload),
    )


def queue_order(engine: AdmissionEngine, cluster_queue: str) -> list[WorkloadInfo]:
    """The ClusterQueue's pending workloads in admission order (empty for an unknown queue)."""
    return engine.pending_in_order(cluster_queue)


def positioned(
    engine: AdmissionEngine,
    cluster_queue: str,
    now: float,
    *,
    namespace: str | None = None,
    local_queue: str | None = None,
) -> list[PendingWorkload]:
    """One ClusterQueue's pending workloads with both positions, optionally one LocalQueue's."""
    found = []
    per_local: dict[tuple[str, str], int] = {}
    for index, workload in enumerate(queue_order(engine, cluster_queue)):
        lq_key = (workload.namespace, workload.local_queue)
        in_lq = per_local.get(lq_key, 0)
        per_local[lq_key] = in_lq + 1
        if namespace is not None and workload.namespace != namespace:
            continue
        if local_queue is not None and workload.local_queue != local_queue:
            continue
        found.append(_entry(engine, workload, now, index, in_lq))
    return found


def pending_workloads(
    state: QueueState,
    *,
    cluster_queue: str | None = None,
    namespace: str | None = None,
    local_queue: str | None = None,
) -> list[PendingWorkload]:
    """Pending workloads, by ClusterQueue (sorted by name) and position; filters narrow it down.

    ``local_queue`` needs ``namespace``. Workloads waiting outside any ClusterQueue follow.
    """
    engine = state.engine
    if cluster_queue is not None:
        queues: Iterable[str] = [cluster_queue]
    elif namespace is not None and local_queue is not None:
        lq = engine.local_queue(namespace, local_queue)
        queues = [lq.spec.cluster_queue] if lq is not None else []
    else:
        queues = sorted(engine.cluster_queues())
    found: list[PendingWorkload] = []
    for name in queues:
        found.extend(positioned(engine, name, state.now, namespace=namespace, local_queue=local_queue))
    outside = [
        w
        for w in engine.all_workloads()
        if (w.state is WorkloadState.INADMISSIBLE or (w.state is WorkloadState.PENDING and w.cluster_queue is None))
        and (namespace is None or w.namespace == namespace)
        and (local_queue is None or w.local_queue == local_queue)
        and (cluster_queue is None or w.cluster_queue == cluster_queue)
    ]
    outside.sort(key=lambda w: (w.namespace, w.name))
    found.extend(_entry(engine, w, state.now, None, None) for w in outside)
    return found


def find_pending(state: QueueState, key: str) -> PendingWorkload | None:
    """The pending entry of one workload (``namespace/name``), with its positions."""
    workload = state.engine.workload(key)
    if workload is None:
        return None
    if workload.cluster_queue is not None and workload.state is WorkloadState.PENDING:
        for entry in positioned(state.engine, workload.cluster_queue, state.now, namespace=workload.namespace):
            if entry.name == workload.name:
                return entry
    return _entry(state.engine, workload, state.now, None, None)
