"""What one simulation run hands back: summary figures, invariants, samples and the jobs that never ran."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ProgressCallback = Callable[[int, int, float], None]  # (jobs finished or gone, jobs total, virtual time)


@dataclass
class SimulationResult:
    scenario: str
    seed: int
    summary: dict[str, Any]
    invariants: dict[str, Any]
    events: int
    wall_seconds: float
    engine_seconds: float
    cycles: int
    samples: list[Any] = field(default_factory=list)
    wait_times: dict[str, list[float]] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    never_ran: list[dict[str, Any]] = field(default_factory=list)  # see simulations.never_ran
    unfinished: list[dict[str, Any]] = field(default_factory=list)  # admitted, not finished: same module

    @property
    def invariants_held(self) -> bool:
        return bool(self.invariants["violations"] == 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "events": self.events,
            "cycles": self.cycles,
            "wall_seconds": round(self.wall_seconds, 3),
            "engine_seconds": round(self.engine_seconds, 3),
            "invariants": self.invariants,
            "notes": self.notes,
            **self.summary,
            "never_ran": self.never_ran,
            "unfinished_jobs": self.unfinished,
        }
