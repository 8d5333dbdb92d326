"""What the engine's parts (the cycle, restore, explain, views, node failures) need from it.

``AdmissionEngine`` (the facade in ``engine``) owns the state and the workload transitions; the
parts below it receive it typed as ``EngineCore`` so no part imports the facade and the arrows
between files point one way. Only what the parts use is listed here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from scheduler.api.kueue import Workload
from scheduler.engine.cluster import ClusterModel, ClusterQueueInfo
from scheduler.engine.config import EngineConfig
from scheduler.engine.placement import PlacementBook
from scheduler.engine.results import EvictedWorkload
from scheduler.engine.workloads import Admission, WorkloadInfo


def parse_timestamp(text: str | None) -> float | None:
    """RFC 3339 (as Kubernetes writes timestamps) to epoch seconds; None if absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class EngineCore(Protocol):
    """The engine's state and workload transitions, as its parts see them."""

    config: EngineConfig
    model: ClusterModel
    placements: PlacementBook
    workloads: dict[str, WorkloadInfo]

    def priority_of(self, workload: Workload) -> int: ...

    def cluster_queue_of(self, workload: WorkloadInfo) -> ClusterQueueInfo | None: ...

    def admit(self, workload: WorkloadInfo, cq: ClusterQueueInfo, admission: Admission, now: float) -> None:
        """Charge the quota, reserve the nodes and mark the workload admitted."""

    def requeue(self, workload: WorkloadInfo, reason: str, message: str, now: float) -> None:
        """Release what the workload holds and put it back in its queue at once (preemption)."""

    def evict(self, key: str, reason: str, now: float, *, message: str = "") -> EvictedWorkload | None:
        """Release an admitted workload and requeue it with backoff."""

    def hold_until(self, workload: WorkloadInfo, when: float, reason: str) -> None:
        """Keep the workload pending, out of every queue, until ``when``."""
