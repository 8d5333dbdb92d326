"""Fault injection for the example trainer: a rank that crashes at a chosen step, for tests of the
launcher's failure policies (``TRAINYARD_FAIL_AT_STEP``, ``TRAINYARD_FAIL_RANK``,
``TRAINYARD_FAIL_ATTEMPT``, ``TRAINYARD_FAIL_EXIT_CODE``; see ``runtimes.examples.ddp_trainer``)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class FaultInjection:
    """A rank told to crash at a step of an attempt (from TRAINYARD_FAIL_* in the environment)."""

    step: int
    rank: int
    attempt: str
    exit_code: int

    @classmethod
    def from_env(cls) -> FaultInjection | None:
        step = os.environ.get("TRAINYARD_FAIL_AT_STEP")
        if not step:
            return None
        return cls(
            step=int(step),
            rank=int(os.environ.get("TRAINYARD_FAIL_RANK", "0")),
            attempt=os.environ.get("TRAINYARD_FAIL_ATTEMPT", "0"),
            exit_code=int(os.environ.get("TRAINYARD_FAIL_EXIT_CODE", "1")),
        )

    def fires(self, step: int, rank: int, attempt: int) -> bool:
        attempt_matches = self.attempt == "all" or int(self.attempt) == attempt
        return step == self.step and rank == self.rank and attempt_matches


def restart_attempt() -> int:
    """The restart attempt this process runs in: the local launcher's count, else torchrun's."""
    value = os.environ.get("TRAINYARD_RESTART_ATTEMPT") or os.environ.get("TORCHELASTIC_RESTART_COUNT")
    return int(value) if value else 0
