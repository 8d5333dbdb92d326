"""Exponential backoff with jitter, reset after a success."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    initial: float = 0.5
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2  # up to this fraction added, so many clients do not retry in step
    _next: float = field(default=0.0, init=False, repr=False)

    def next_delay(self, at_least: float | None = None) -> float:
        """The next delay (growing), or ``at_least`` (a Retry-After) when that is longer."""
        base = self._next or self.initial
        self._next = min(base * self.factor, self.maximum)
        delay = base * (1 + random.uniform(0, self.jitter))
        return max(delay, at_least or 0.0)

    def reset(self) -> None:
        self._next = 0.0
