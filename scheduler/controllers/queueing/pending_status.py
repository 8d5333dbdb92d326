"""Which pending Workloads get their ``QuotaReserved=False`` message written, and when.

Kueue writes a pending Workload's reason into its QuotaReserved condition; trainyard adds the
queue position. Written naively that is a write storm: a queue of five thousand moves up by one
every time a job is admitted, and a freed quota changes the numbers in every waiting reason. So:

- a new reason (its skeleton changed: not only the position or the numbers in it) is planned at
  once, with an Event (the queue controller hands every reason off as a background write, which
  never delays an admission and is dropped once its Workload is decided);
- a change of position or numbers alone is refreshed at most every ``refresh`` seconds per
  workload, and at most ``refresh_rate`` such writes per second over the whole queue, the
  longest-unrefreshed first. The backlog of refreshes drains over later cycles, so a long queue
  costs the API server a steady trickle instead of a burst per cycle. The trickle is kept thin
  (five a second): Kueue writes no positions at all, the visibility API answers them exactly, and
  at twenty a second a 15,000-Workload backlog cost a third more status writes than Kueue's.

Working out a reason costs the controller too, so a plan looks at new arrivals, at the heads
the cycle just tried (their reasons are fresh), and at most ``sweep`` others, the longest unlooked
at first: on a queue of fifteen thousand a plan costs a few milliseconds, and every waiting
workload is looked at again within a few dozen plans. The queue controller plans at most once a
``interval`` seconds however many cycles run.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scheduler.controllers.conditions import find_condition
from scheduler.controllers.queueing.engine_mirror import workload_key
from scheduler.controllers.workload_status import pending_patch
from scheduler.engine import AdmissionEngine, WorkloadInfo, WorkloadState, waiting_reason
from scheduler.queues import place_for_people

_POSITION = re.compile(r" \(position \d+ in ClusterQueue [^)]*\)$")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WAITING = (WorkloadState.PENDING, WorkloadState.INADMISSIBLE, WorkloadState.DEACTIVATED)


def reason_skeleton(message: str) -> str:
    """A pending message without its position and with its numbers blanked: what stays when
    only the queue moved or the usage around the workload changed ("2 more needed" -> "6 more
    needed"). A change of skeleton is a new reason."""
    return _NUMBER.sub("#", _POSITION.sub("", message))


def quota_reserved_message(document: dict[str, Any]) -> str | None:
    """The message of a Workload's QuotaReserved=False condition, or None."""
    condition = find_condition((document.get("status") or {}).get("conditions"), "QuotaReserved")
    return str(condition.get("message", "")) if condition is not None and condition.get("status") == "False" else None


@dataclass(frozen=True)
class PendingWrite:
    key: str
    document: dict[str, Any]
    patch: dict[str, Any]
    event_message: str | None  # set when the reason itself is new: it deserves an Event


class PendingStatus:
    def __init__(
        self, *, refresh: float = 10.0, refresh_rate: float = 5.0, interval: float = 1.0, sweep: int = 500
    ) -> None:
        self.refresh = refresh
        self.refresh_rate = refresh_rate
        self.interval = interval
        self.sweep = sweep
        self._written: dict[str, float] = {}  # key -> loop time of the last pending write
        self._looked: dict[str, float] = {}  # key -> loop time its reason was last worked out
        self._last_plan: float | None = None
        # (engine, when, seconds it took, positions): the last queue positions worked out
        self._kept_positions: tuple[AdmissionEngine, float, float, dict[str, int]] | None = None
        self.waiting = False  # the last plan saw workloads waiting: the next one is due

    def due_in(self, now: float) -> float:
        """Seconds until the next plan may run (0: now)."""
        return 0.0 if self._last_plan is None else max(0.0, self._last_plan + self.interval - now)

    def start_term(self, workloads: Iterable[dict[str, Any]], now: float) -> None:
        """A new term: a message already on the server counts as just written, so a new leader
        rewrites a workload's reason at once but not a queue's worth of positions that moved."""
        self._written.clear()
        self._looked.clear()
        self._last_plan = None
        self._kept_positions = None
        for document in workloads:
            if quota_reserved_message(document) is not None:
                self._written[workload_key(document)] = now

    def wrote(self, key: str, now: float) -> None:
        self._written[key] = now

    def forget(self, key: str) -> None:
        self._written.pop(key, None)
        self._looked.pop(key, None)

    def plan(
        self,
        engine: AdmissionEngine,
        cached: Callable[[str], dict[str, Any] | None],
        busy: Callable[[str], bool],
        now: float,
        stamp: float,
        heads: Iterable[str] = (),
    ) -> list[PendingWrite]:
        """The writes this cycle: every new reason found, and refreshes within the rate budget.

        ``now`` is the loop's clock (for the budget), ``stamp`` the wall clock written into the
        condition; ``busy(key)`` is True while another write to the Workload is in flight;
        ``heads`` are the workloads the cycle just tried.
        """
        positions = self._positions(engine, now)
        new_reasons: list[tuple[str, dict[str, Any], str]] = []
        refreshes: list[tuple[float, str, dict[str, Any], str]] = []
        for info in self._to_look_at(engine, heads):
            key = info.key
            self._looked[key] = now
            document = cached(key)
            if document is None or busy(key) or (document.get("status") or {}).get("admission"):
                continue
            message = waiting_reason(engine, info) or "waiting"
            position = positions.get(key)
            if position is not None:
                message += f" (position {place_for_people(position)} in ClusterQueue {info.cluster_queue})"
            current = quota_reserved_message(document)
            if current == message:
                continue
            if current is None or reason_skeleton(current) != reason_skeleton(message):
                new_reasons.append((key, document, message))
                continue
            last = self._written.get(key)
            if last is None or now - last >= self.refresh:
                refreshes.append((-math.inf if last is None else last, key, document, message))
        elapsed = self.refresh if self._last_plan is None else min(now - self._last_plan, self.refresh)
        self._last_plan = now
        budget = max(1, math.ceil(self.refresh_rate * elapsed))
        # the stalest first; patches are built only for what is written (a long queue has thousands of candidates)
        refreshes.sort(key=lambda candidate: candidate[0])
        self.waiting = bool(positions)
        chosen = [(key, document, message, True) for key, document, message in new_reasons]
        chosen += [(key, document, message, False) for _, key, document, message in refreshes[:budget]]
        writes = []
        for key, document, message, is_new in chosen:
            patch = pending_patch(document, message, stamp)
            if patch is not None:
                writes.append(PendingWrite(key, document, patch, message if is_new else None))
        return writes

    def _to_look_at(self, engine: AdmissionEngine, heads: Iterable[str]) -> list[WorkloadInfo]:
        """The waiting workloads this plan works out a reason for: new ones, the cycle's heads,
        and the ``sweep`` looked at longest ago."""
        waiting = [info for info in engine.all_workloads() if info.state in _WAITING]
        if len(self._looked) > 2 * len(waiting) + self.sweep:  # admitted, finished or gone since
            keys = {info.key for info in waiting}
            self._looked = {key: at for key, at in self._looked.items() if key in keys}
        if len(waiting) <= self.sweep:
            return waiting
        fresh = set(heads)
        chosen = [info for info in waiting if info.key in fresh or info.key not in self._looked]
        rest = [info for info in waiting if info.key not in fresh and info.key in self._looked]
        rest.sort(key=lambda info: self._looked[info.key])
        return chosen + rest[: self.sweep]

    def _positions(self, engine: AdmissionEngine, now: float) -> dict[str, int]:
        """Each queued workload's 0-based position in its ClusterQueue (the visibility API's); the
        message says it as people count, from 1 (``place_for_people``). Ordering a queue of
        fifteen thousand takes a tenth of a second, so the positions are kept for up to twenty
        times what working them out took (a new arrival missing from them gets its position at
        a later refresh)."""
        kept = self._kept_positions
        if kept is not None and kept[0] is engine and now - kept[1] < max(self.interval, 20.0 * kept[2]):
            return kept[3]
        started = time.perf_counter()
        positions: dict[str, int] = {}
        for name in engine.cluster_queues():
            for index, workload in enumerate(engine.pending_in_order(name)):
                positions[workload.key] = index
        self._kept_positions = (engine, now, time.perf_counter() - started, positions)
        return positions
