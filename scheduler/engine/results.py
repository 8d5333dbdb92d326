"""What one admission cycle decided, in plain records the service, simulator and CLI consume."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.engine.quota import FlavorResource


@dataclass(frozen=True, slots=True)
class AdmittedWorkload:
    key: str
    cluster_queue: str
    flavors: dict[str, str]  # resource -> flavor (merged over pod sets)
    usage: dict[FlavorResource, int]
    borrowed: dict[FlavorResource, int]
    counts: dict[str, int]  # pod set -> admitted count (less than requested under partial admission)
    placement: dict[str, Any] = field(default_factory=dict)  # flavor -> GangPlacement for TAS flavors


@dataclass(frozen=True, slots=True)
class PreemptedWorkload:
    key: str
    preemptor: str
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing | InCohortFairSharing
    message: str


@dataclass(frozen=True, slots=True)
class EvictedWorkload:
    key: str
    reason: str  # PodsReadyTimeout | NodeFailures | ClusterQueueStopped | ...
    message: str
    # when it is back in its queue (a stopped queue holds it until started); None: deactivated,
    # it will not come back by itself
    requeue_at: float | None


@dataclass(slots=True, init=False)
class CycleResult:
    admitted: list[AdmittedWorkload]
    preempted: list[PreemptedWorkload]
    evicted: list[EvictedWorkload]
    pending: dict[str, str]  # key -> why it waits, in words
    rounds: int

    # written out (init=False): mypyc compiles it, while a dataclass's generated __init__ runs interpreted
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
