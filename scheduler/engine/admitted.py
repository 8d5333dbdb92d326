"""A ClusterQueue's admitted workloads, indexed by priority for the preemption search.

Every head that waits on quota asks the preemption oracle, for each contested resource, who
could be evicted. On a full cluster that is most heads of most cycles, and the answer is nearly
always "nobody": every admitted workload has the same or a higher priority, or the quota would
not fit even with all of them gone. Scanning thousands of admitted workloads to learn that was
most of a large simulation's time. Here each priority level keeps its workloads together with
their summed usage and, per (flavor, resource), how many of them use it, so the search can skip
a level, or total it, without visiting its workloads.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, ValuesView
from dataclasses import dataclass, field

from scheduler.engine.quota import FlavorResource
from scheduler.engine.workloads import WorkloadInfo


@dataclass(slots=True)
class PriorityLevel:
    """The admitted workloads of one priority, in admission order, with their usage totals."""

    priority: int
    workloads: dict[str, WorkloadInfo] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)  # summed over ``workloads``
    users: dict[FlavorResource, int] = field(default_factory=dict)  # how many use each (usage > 0)
    # Admissions usually come in time order, so ``workloads`` (insertion order) is already
    # oldest first; one restored out of order (an older status stamp) sets this to False.
    in_time_order: bool = True
    last_admitted_at: float = float("-inf")

    def __len__(self) -> int:
        return len(self.workloads)

    def used_by_all(self, resources: list[FlavorResource]) -> bool:
        """Does every workload here use at least one of ``resources``? (True when all use one.)"""
        count = len(self.workloads)
        return any(self.users.get(fr, 0) == count for fr in resources)

    def used_by_any(self, resources: list[FlavorResource]) -> bool:
        return any(self.users.get(fr, 0) > 0 for fr in resources)

    def newest_first(self) -> Iterator[WorkloadInfo]:
        """The workloads by admission time, newest first, ties by UID: Kueue's order within a level.

        Lazy: a preemption search usually stops after a few candidates, so the level is walked
        backwards rather than sorted whole.
        """
        if not self.in_time_order:
            yield from sorted(self.workloads.values(), key=lambda w: (-w.admitted_at, w.uid))
            return
        tied: list[WorkloadInfo] = []
        for workload in reversed(self.workloads.values()):
            if tied and workload.admitted_at != tied[0].admitted_at:
                yield from _by_uid(tied)
                tied = []
            tied.append(workload)
        yield from _by_uid(tied)


def _by_uid(tied: list[WorkloadInfo]) -> list[WorkloadInfo]:
    return tied if len(tied) == 1 else sorted(tied, key=lambda w: w.uid)


class AdmittedWorkloads(Mapping[str, WorkloadInfo]):
    """Key → admitted workload, plus the per-priority index (read-only outside ``add``/``discard``)."""

    def __init__(self) -> None:
        self._by_key: dict[str, WorkloadInfo] = {}
        # what each workload was indexed under: its priority and usage when it was added, so a
        # removal takes back exactly what the addition put in
        self._indexed: dict[str, tuple[int, dict[FlavorResource, int]]] = {}
        self._levels: dict[int, PriorityLevel] = {}
        self._priorities: list[int] = []  # ascending

    # ------------------------------------------------------------------------------ Mapping

    def __getitem__(self, key: str) -> WorkloadInfo:
        return self._by_key[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def values(self) -> ValuesView[WorkloadInfo]:
        return self._by_key.values()  # the dict's own view: no per-item __getitem__

    # ------------------------------------------------------------------------------ changes

    def add(self, workload: WorkloadInfo) -> None:
        self.discard(workload.key)
        usage = dict(workload.admission.usage) if workload.admission is not None else {}
        priority = workload.priority
        level = self._levels.get(priority)
        if level is None:
            level = self._levels[priority] = PriorityLevel(priority)
            bisect.insort(self._priorities, priority)
        level.workloads[workload.key] = workload
        if workload.admitted_at < level.last_admitted_at:
            level.in_time_order = False
        level.last_admitted_at = workload.admitted_at
        for fr, amount in usage.items():
            level.usage[fr] = level.usage.get(fr, 0) + amount
            if amount > 0:
                level.users[fr] = level.users.get(fr, 0) + 1
        self._by_key[workload.key] = workload
        self._indexed[workload.key] = (priority, usage)

    def discard(self, key: str) -> WorkloadInfo | None:
        workload = self._by_key.pop(key, None)
        if workload is None:
            return None
        priority, usage = self._indexed.pop(key)
        level = self._levels[priority]
        del level.workloads[key]
        if not level.workloads:
            del self._levels[priority]
            self._priorities.remove(priority)
            return workload
        for fr, amount in usage.items():
            level.usage[fr] -= amount
            if amount > 0:
                level.users[fr] -= 1
        return workload

    # ------------------------------------------------------------------------------ index

    def levels(self) -> list[PriorityLevel]:
        """Every priority level, lowest priority first."""
        return [self._levels[p] for p in self._priorities]

    def levels_below(self, priority: int) -> list[PriorityLevel]:
        """The levels with a priority lower than ``priority``, lowest first."""
        end = bisect.bisect_left(self._priorities, priority)
        return [self._levels[p] for p in self._priorities[:end]]

    def levels_up_to(self, priority: int) -> list[PriorityLevel]:
        """The levels with a priority of at most ``priority``, lowest first."""
        end = bisect.bisect_right(self._priorities, priority)
        return [self._levels[p] for p in self._priorities[:end]]
