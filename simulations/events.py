"""Virtual time: a heap of timestamped events with a stable tie-break, and seeded random streams.

Events at the same virtual time run in the order they were scheduled (the ``seq`` counter), so
a run is a pure function of its inputs and seed. A scheduled event can be cancelled by bumping
the owner's generation: a popped event whose generation is stale is dropped (lazy deletion, as
the heapq notes recommend), which is what preemption needs to void a pending completion.
"""

from __future__ import annotations

import heapq
import itertools
import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class EventKind(IntEnum):
    """What happens at a point in virtual time. The value orders nothing; ``seq`` does."""

    ARRIVAL = 1
    GANG_READY = 2
    GANG_COMPLETE = 3
    NODE_FAILURE = 4
    NODE_REPAIR = 5
    ENGINE_TIMER = 6
    SAMPLE = 7


@dataclass(slots=True, init=False)
class Event:
    time: float
    kind: EventKind
    subject: str  # workload key, node name, or "" for cluster-wide events
    generation: int
    index: int  # position of the job in the workload stream, for arrivals

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        time: float,
        kind: EventKind,
        subject: str,
        generation: int = 0,
        index: int = -1,
    ) -> None:
        self.time = time
        self.kind = kind
        self.subject = subject
        self.generation = generation
        self.index = index


class EventQueue:
    """Min-heap of ``(time, seq, event)``; ``seq`` makes equal times first-in first-out."""

    __slots__ = ("_counter", "_heap", "popped", "pushed")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Event]] = []
        self._counter = itertools.count()
        self.pushed = 0
        self.popped = 0

    def push(self, event: Event) -> None:
        if event.time != event.time or event.time < 0:  # NaN or negative
            raise ValueError(f"event time must be a non-negative number, got {event.time!r}")
        heapq.heappush(self._heap, (event.time, next(self._counter), event))
        self.pushed += 1

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> Event:
        self.popped += 1
        return heapq.heappop(self._heap)[2]

    def pop_batch(self) -> list[Event]:
        """Every event at the earliest time, in scheduling order."""
        if not self._heap:
            return []
        time = self._heap[0][0]
        batch: list[Event] = []
        while self._heap and self._heap[0][0] == time:
            batch.append(heapq.heappop(self._heap)[2])
        self.popped += len(batch)
        return batch

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator[Event]:
        """Pending events in time order (a sorted copy; the queue is unchanged)."""
        return (entry[2] for entry in sorted(self._heap))


def stream_seed(seed: int, name: str) -> int:
    """A seed for one named input stream, stable across runs and Python versions.

    ``hash(str)`` is salted per process, so the stream name is folded in with CRC-32 instead.
    """
    return (seed * 0x9E3779B1 + zlib.crc32(name.encode())) & 0xFFFFFFFF


class RandomStreams:
    """One independent generator per input (arrivals, sizes, durations, stage jitter, failures).

    Separate streams mean that changing one input (say, the failure rate) does not reshuffle
    the others: the same seed gives the same arrivals whatever else a comparison varies.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._numpy: dict[str, np.random.Generator] = {}
        self._python: dict[str, random.Random] = {}

    def numpy(self, name: str) -> np.random.Generator:
        if name not in self._numpy:
            self._numpy[name] = np.random.default_rng(stream_seed(self.seed, name))
        return self._numpy[name]

    def python(self, name: str) -> random.Random:
        """A ``random.Random``: cheaper than numpy for one scalar draw at a time."""
        if name not in self._python:
            self._python[name] = random.Random(stream_seed(self.seed, name))
        return self._python[name]
