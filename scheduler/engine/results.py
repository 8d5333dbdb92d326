"""What one admission cycle decided, in plain records the service, simulator and CLI consume."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.engine.quota import FlavorResource


@dataclass(slots=True, init=False)
class AdmittedWorkload:
    key: str
    cluster_queue: str
    flavors: dict[str, str]  # resource -> flavor (merged over pod sets)
    usage: dict[FlavorResource, int]
    borrowed: dict[FlavorResource, int]
    counts: dict[str, int]  # pod set -> admitted count (less than requested under partial admission)
    placement: dict[str, Any]  # flavor -> GangPlacement for TAS flavors

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        key: str,
        cluster_queue: str,
        flavors: dict[str, str],
        usage: dict[FlavorResource, int],
        borrowed: dict[FlavorResource, int],
        counts: dict[str, int],
        placement: dict[str, Any] | None = None,
    ) -> None:
        self.key = key
        self.cluster_queue = cluster_queue
        self.flavors = flavors
        self.usage = usage
        self.borrowed = borrowed
        self.counts = counts
        self.placement = {} if placement is None else placement


@dataclass(slots=True, init=False)
class PreemptedWorkload:
    key: str
    preemptor: str
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing | InCohortFairSharing
    message: str

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        key: str,
        preemptor: str,
        reason: str,
        message: str,
    ) -> None:
        self.key = key
        self.preemptor = preemptor
        self.reason = reason
        self.message = message


@dataclass(slots=True, init=False)
class EvictedWorkload:
    key: str
    reason: str  # PodsReadyTimeout | NodeFailures | ClusterQueueStopped | ...
    message: str
    # when it is back in its queue (a stopped queue holds it until started); None: deactivated,
    # it will not come back by itself
    requeue_at: float | None

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        key: str,
        reason: str,
        message: str,
        requeue_at: float | None,
    ) -> None:
        self.key = key
        self.reason = reason
        self.message = message
        self.requeue_at = requeue_at


@dataclass(slots=True, init=False)
class CycleResult:
    admitted: list[AdmittedWorkload]
    preempted: list[PreemptedWorkload]
    evicted: list[EvictedWorkload]
    pending: dict[str, str]  # key -> why it waits, in words
    rounds: int

    # mypyc: CONTRIBUTING.md
    def __init__(self) -> None:
        self.admitted = []
        self.preempted = []
        self.evicted = []
        self.pending = {}
        self.rounds = 0

    @property
    def decisions(self) -> int:
        """Admissions plus preemptions, the unit of the admission benchmark."""
        return len(self.admitted) + len(self.preempted)

    def extend(self, other: CycleResult) -> None:
        self.admitted.extend(other.admitted)
        self.preempted.extend(other.preempted)
        self.evicted.extend(other.evicted)
        self.pending.update(other.pending)
        self.rounds += other.rounds
