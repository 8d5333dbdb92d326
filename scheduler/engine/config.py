"""Engine configuration, mirroring the parts of Kueue's Configuration the engine honours."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from scheduler.topology.policy import PlacementPolicy


@dataclass(frozen=True, slots=True)
class RequeuingStrategy:
    """waitForPodsReady.requeuingStrategy: backoff = base × 2^(n-1), capped at max."""

    timestamp: Literal["Eviction", "Creation"] = "Eviction"
    backoff_limit_count: int | None = None  # None = requeue forever
    backoff_base_seconds: float = 60.0
    backoff_max_seconds: float = 3600.0

    def backoff(self, requeue_count: int) -> float:
        return float(min(self.backoff_base_seconds * 2.0 ** max(0, requeue_count - 1), self.backoff_max_seconds))


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    """All-or-nothing start: admitted workloads must have every pod ready within ``timeout``."""

    timeout_seconds: float = 1800.0  # Kueue's default 30m
    requeuing: RequeuingStrategy = field(default_factory=RequeuingStrategy)


@dataclass(frozen=True, slots=True)
class EngineConfig:
    fair_sharing: bool = False
    wait_for_pods_ready: WaitForPodsReady | None = None
    # Beyond Kueue: keep admitting from one ClusterQueue within a cycle while capacity allows
    # (kueue#14477). The outcome equals admitting one head per ClusterQueue per cycle, in order.
    multiple_admissions_per_cycle: bool = True
    partial_admission: bool = True
    # Beyond Kueue: a placement policy that chooses TAS pod sets' nodes instead of the placer's own
    # (scheduler.topology.policy; the simulator compares policies with it). None: the placer's.
    placement_policy: PlacementPolicy | None = None
