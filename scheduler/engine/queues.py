"""What waits: one ordered queue per ClusterQueue (Kueue pkg/cache/queue).

Pending workloads are grouped by scheduling shape. The active heap holds the best workload of
every shape that is not parked; a shape is *parked* after its head could not be admitted
(BestEffortFIFO) and stays parked until capacity in its cohort changes. Under StrictFIFO the
whole queue is parked instead, because its head blocks everyone behind it.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from scheduler.engine.workloads import WorkloadInfo, WorkloadState

_OrderKey = tuple[int, float, str]


@dataclass(slots=True)
class _ShapeQueue:
    heap: list[tuple[_OrderKey, int, WorkloadInfo]] = field(default_factory=list)

    def top(self, cluster_queue: str) -> WorkloadInfo | None:
        while self.heap:
            _, _, workload = self.heap[0]
            if workload.state is WorkloadState.PENDING and workload.cluster_queue == cluster_queue:
                return workload
            heapq.heappop(self.heap)
        return None


class ClusterQueueQueue:
    """Pending workloads of one ClusterQueue, in Kueue's order."""

    def __init__(self, name: str, strict_fifo: bool) -> None:
        self.name = name
        self.strict_fifo = strict_fifo
        self._shapes: dict[str, _ShapeQueue] = {}
        self._active: list[tuple[_OrderKey, int, str]] = []  # (order key, seq, shape), lazily cleaned
        self._parked: set[str] = set()
        self._park_reasons: dict[str, str] = {}  # shape -> why its head could not be admitted
        self.blocked = False  # StrictFIFO: the head could not be admitted
        self._entries = 0

    def __len__(self) -> int:
        return sum(
            1
            for shape in self._shapes.values()
            for _, _, w in shape.heap
            if w.state is WorkloadState.PENDING and w.cluster_queue == self.name
        )

    def push(self, workload: WorkloadInfo) -> None:
        shape = self._shapes.get(workload.shape)
        if shape is None:
            shape = self._shapes[workload.shape] = _ShapeQueue()
        self._entries += 1
        key = workload.order_key()
        heapq.heappush(shape.heap, (key, workload.sequence, workload))
        if workload.shape not in self._parked:
            heapq.heappush(self._active, (key, workload.sequence, workload.shape))

    def head(self) -> WorkloadInfo | None:
        """The next workload to try, or None when everything left is parked."""
        if self.blocked:
            return None
        while self._active:
            key, sequence, shape_name = self._active[0]
            if shape_name in self._parked:
                heapq.heappop(self._active)
                continue
            top = self._shapes[shape_name].top(self.name)
            if top is None or top.sequence != sequence or top.order_key() != key:
                heapq.heappop(self._active)
                if top is not None:
                    heapq.heappush(self._active, (top.order_key(), top.sequence, shape_name))
                continue
            return top
        return None

    def park(self, workload: WorkloadInfo, reason: str) -> None:
        """The workload could not be admitted: hold back its kind until capacity changes."""
        self._park_reasons[workload.shape] = reason
        if self.strict_fifo:
            self.blocked = True
        else:
            self._parked.add(workload.shape)

    def unpark_all(self) -> bool:
        """Capacity changed: every parked shape may be tried again. True if anything moved."""
        moved = bool(self._parked) or self.blocked
        self.blocked = False
        for shape_name in self._parked:
            top = self._shapes[shape_name].top(self.name)
            if top is not None:
                heapq.heappush(self._active, (top.order_key(), top.sequence, shape_name))
        self._parked.clear()
        return moved

    def park_reason(self, workload: WorkloadInfo) -> str | None:
        """Why a workload of this shape last failed to be admitted, if it did."""
        return self._park_reasons.get(workload.shape)

    def pending(self) -> list[WorkloadInfo]:
        """Every pending workload, in queue order (for reporting; not a hot path)."""
        found = {
            w.key: w
            for shape in self._shapes.values()
            for _, _, w in shape.heap
            if w.state is WorkloadState.PENDING and w.cluster_queue == self.name
        }
        return sorted(found.values(), key=lambda w: (w.order_key(), w.sequence))

    def compact(self) -> None:
        """Drop finished entries; called occasionally so lazy deletion cannot grow without bound."""
        for name in list(self._shapes):
            shape = self._shapes[name]
            live = [e for e in shape.heap if e[2].state is WorkloadState.PENDING and e[2].cluster_queue == self.name]
            if not live:
                del self._shapes[name]
                self._parked.discard(name)
                continue
            heapq.heapify(live)
            shape.heap = live
        self._active = [e for e in self._active if e[2] in self._shapes]
        heapq.heapify(self._active)
