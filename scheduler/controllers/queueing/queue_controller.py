"""The queue controller: admission cycles of the engine, written back on Workloads in Kueue's shapes.

One reconciler, four kinds of request (``scheduler.controllers.requests.QueueRequest``):

- ``CYCLE``: run ``engine.schedule(now)`` and write its decisions. Input changes ask for a
  cycle ``debounce`` seconds after the first change (a burst of events is one cycle) and never
  sooner than ``min_interval`` after the previous one, nor than twice the previous cycle's own
  computing time (so a cycle over a long queue takes at most a third of the loop, and a short
  queue is admitted within tens of milliseconds); the engine's own timers (pods-ready timeouts,
  requeue backoff) come back as ``requeue_after``.
- ``WorkloadPodsRequest``: the workload's pods changed; PodsReady is recomputed.
- ``NodeRequest``: a Node turned NotReady or went away; gangs placed on it are handled.
- ``RESYNC``: every ``resync_period`` seconds (longer where a pass is slow) the engine is
  compared with the cached Workloads and healed where a missed change left them apart
  (``EngineMirror.resync``); pending work gets a cycle if none ran meanwhile, so no wake-up can
  be lost for good.

Writes keep the API server within quota at every moment: victims' evictions are written before
any admission, nothing that could stand on a victim's quota or nodes is admitted unless its
eviction landed (a cycle and a failed node's evictions never overlap), and
any decision whose write fails is undone in the engine by taking the Workload back as the cache
has it (``EngineMirror.resubmit``): no leaked quota, no double admission. A cycle awaits its
evictions only: its admissions and pending-status writes are handed off (``HandedOffWrites``)
and land while the next cycle decides, which counts them as admitted meanwhile (the cautious
side) and takes back, should one fail, only quota the server never showed used.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.events import NORMAL, WARNING, EventRecorder
from scheduler.controllers.manager import KeyMapper
from scheduler.controllers.node_readiness import node_request_for_change
from scheduler.controllers.queueing.engine_mirror import EngineMirror, workload_key
from scheduler.controllers.queueing.handed_off import HandedOffWrites
from scheduler.controllers.queueing.health import HealthChecks, pods_request_for_change
from scheduler.controllers.queueing.metrics import QueueMetrics
from scheduler.controllers.queueing.pending_status import PendingStatus, PendingWrite
from scheduler.controllers.queueing.still_held import may_stand_on, quota_trees_held
from scheduler.controllers.queueing.workload_writer import WorkloadStatusWriter
from scheduler.controllers.requests import CYCLE, RESYNC, CycleRequest, NodeRequest, QueueRequest, ResyncRequest
from scheduler.controllers.runtime import ReconcileResult
from scheduler.controllers.views import WorkloadView
from scheduler.controllers.workload_status import admitted_patch, evicted_patch
from scheduler.engine import (
    AdmissionEngine,
    CycleResult,
    EngineConfig,
    EvictedWorkload,
    ReplacedPlacement,
    WorkloadState,
)
from scheduler.kube import KubeClient

log = logging.getLogger(__name__)


class QueueController:
    name = "queue"

    def __init__(
        self,
        client: KubeClient,
        cache: ClusterCache,
        *,
        config: EngineConfig | None = None,
        metrics: QueueMetrics | None = None,
        events: EventRecorder | None = None,
        clock: Callable[[], float] = time.time,
        debounce: float = 0.02,
        min_interval: float = 0.05,
        pending_refresh: float = 10.0,
        pending_refresh_rate: float = 5.0,
        pending_interval: float = 1.0,
        write_concurrency: int = 16,
        resync_period: float = 5.0,
    ) -> None:
        self.client = client
        self.cache = cache
        self.clock = clock
        self.metrics = metrics
        if metrics is not None:
            metrics.follow(lambda: self.engine)  # its gauges are read from the engine when scraped
        self.events = events
        self.debounce = debounce
        self.min_interval = min_interval
        self.pending = PendingStatus(
            refresh=pending_refresh, refresh_rate=pending_refresh_rate, interval=pending_interval
        )
        self.resync_period = resync_period
        self.mirror = EngineMirror(cache, config, clock=clock, on_change=self.request_cycle)
        self.writer = WorkloadStatusWriter(client, self.mirror, write_concurrency)
        self.handed_off = HandedOffWrites()
        self.mirror.handed_off = self.handed_off.busy  # a handed-off admission counts until it lands
        self.health = HealthChecks(self)
        self.queue_add_after: Callable[[QueueRequest, float], None] | None = None  # set by bind()
        self._last_cycle: float | None = None  # loop time
        self._cycle_cost = 0.0  # seconds the last cycle spent computing (not waiting on writes)
        self.cycles = 0
        self.cycle_due = False  # a cycle was asked for (an input changed) and has not begun yet
        self.cycle_listeners: list[Callable[[], None]] = []  # told once each cycle has decided
        self.healed = 0  # workloads a resync found the engine wrong about (each a missed change)
        self._resync_due = False
        self._resync_cost = 0.0  # seconds the last resync pass took
        # Decisions that release quota in the engine before their writes land (a cycle's, a
        # failed node's evictions) take turns: another cycle must not hand out quota an eviction
        # still in flight may yet keep, should that eviction be refused.
        self._deciding = asyncio.Lock()

    @property
    def engine(self) -> AdmissionEngine:
        return self.mirror.engine

    def bind(self, add_after: Callable[[QueueRequest, float], None]) -> None:
        """Give the controller its work queue's ``add_after`` (so changes can ask for a cycle)."""
        self.queue_add_after = add_after

    def enqueue_map(self) -> dict[str, KeyMapper[QueueRequest]]:
        """The manager's mappers: Pods and Nodes ask for health checks. Engine inputs ask for a
        (debounced) cycle through the mirror, not through a request added at once."""
        return {"Node": node_request_for_change, "Pod": pods_request_for_change}

    # ------------------------------------------------------------------ the reconciler

    async def prepare(self) -> None:
        """A new term: the engine is rebuilt from the Workloads' status, then a cycle runs."""
        self.mirror.rebuild()
        self.pending.start_term(self.cache.list("Workload"), asyncio.get_running_loop().time())
        self._last_cycle = None
        self.request_cycle()
        if self.queue_add_after is not None:
            self.queue_add_after(RESYNC, self.resync_period)

    async def run_alongside(self) -> None:
        """The handed-off writes' task group and the Event sender, for as long as the controller runs."""
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self.handed_off.run(), name="queue-handed-off-writes")
            if self.events is not None:
                tasks.create_task(self.events.run(), name="queue-events")

    async def reconcile(self, request: QueueRequest) -> ReconcileResult:
        if isinstance(request, CycleRequest):
            async with self._deciding:
                return await self._cycle()
        if isinstance(request, ResyncRequest):
            return self._resync()
        if isinstance(request, NodeRequest):
            async with self._deciding:
                return await self.health.reconcile(request)
        return await self.health.reconcile(request)

    def _resync(self) -> ReconcileResult:
        """Ask the next cycle to compare the engine with the cache first (done inside the cycle,
        so it never runs between a cycle's decisions and their writes)."""
        self._resync_due = True
        self.request_cycle()
        # a pass over many thousand Workloads is not free: it takes at most a twentieth of the time
        return ReconcileResult(requeue_after=max(self.resync_period, 20.0 * self._resync_cost))

    def request_cycle(self) -> None:
        if self.queue_add_after is None:
            return
        self.cycle_due = True
        loop = asyncio.get_running_loop()
        delay = self.debounce
        if self._last_cycle is not None:
            delay = max(delay, self._last_cycle + self._gap() - loop.time())
        self.queue_add_after(CYCLE, delay)

    def _gap(self) -> float:
        return max(self.min_interval, 2.0 * self._cycle_cost)

    async def _cycle(self) -> ReconcileResult:
        self._last_cycle = asyncio.get_running_loop().time()
        self.cycles += 1
        self.cycle_due = False
        if self._resync_due:
            self._resync_due = False
            started = time.perf_counter()
            self.healed += len(self.mirror.resync())
            self._resync_cost = time.perf_counter() - started
        now = self.clock()
        started = time.perf_counter()
        result = self.engine.schedule(now)
        self._cycle_cost = cost = time.perf_counter() - started
        size = (len(result.admitted), len(result.preempted), len(result.evicted), len(result.pending))
        log.debug("cycle %d (%.3f s): %d admitted, %d preempted, %d evicted, %d waiting", self.cycles, cost, *size)
        for listener in self.cycle_listeners:
            listener()
        retry = await self._write_decisions(result, now)
        if self.pending.due_in(asyncio.get_running_loop().time()) == 0.0 and not self.handed_off.background_in_flight:
            await self._write_pending(now, result.pending)
        # the next plan: when due, or (due but the last plan's writes still landing) a period on
        plan_in = self.pending.due_in(asyncio.get_running_loop().time()) or self.pending.interval
        wake = self.engine.next_timer()
        delay = None if wake is None else max(0.0, wake - self.clock())
        if retry:
            delay = self._gap() if delay is None else min(delay, self._gap())
        if self.pending.waiting:  # reasons still to work out or refresh: a cycle comes back for them
            delay = plan_in if delay is None else min(delay, plan_in)
        return ReconcileResult(requeue_after=delay)

    # ------------------------------------------------------------------ decisions

    async def _write_decisions(self, result: CycleResult, now: float) -> bool:
        """Evictions first, awaited; then admissions, handed off. True if an eviction failed or an
        admission was held back (another cycle is due; a handed-off admission that fails asks for
        one itself). An admission that could stand on what a failed eviction still holds
        (``still_held``) is taken back in the engine and decided again next cycle.
        """
        victims = [p.key for p in result.preempted] + [e.key for e in result.evicted]
        trees = quota_trees_held(self.engine, victims)
        evictions: list[Awaitable[bool]] = []
        for preempted in result.preempted:
            evictions.append(
                self._evict(preempted.key, "Preempted", preempted.message, now, preempted_reason=preempted.reason)
            )
        for evicted in result.evicted:
            evictions.append(
                self._evict(evicted.key, evicted.reason, evicted.message, now, requeue_at=evicted.requeue_at)
            )
        # Until its write is handed off, an admission exists in the engine only: a change that
        # arrives meanwhile (the echo of its own earlier pending reason) must not take it back.
        decided = {admitted.key for admitted in result.admitted}
        self.mirror.deciding |= decided
        try:
            outcomes = await asyncio.gather(*evictions)
            failed = not all(outcomes)
            still_held = {trees[key] for key, ok in zip(victims, outcomes, strict=True) if not ok}
            for admitted in result.admitted:
                if still_held and may_stand_on(self.engine, admitted, still_held):
                    # admitting it now could overcommit what a victim still holds on the server
                    self.mirror.deciding.discard(admitted.key)
                    self.mirror.resubmit(admitted.key, "a victim's eviction failed")
                    failed = True
                    continue
                await self.handed_off.hand_off(admitted.key, self._admission(admitted.key, now))
                self.mirror.deciding.discard(admitted.key)  # handed off: busy until it lands
        finally:
            self.mirror.deciding -= decided
        return failed

    def _admission(self, key: str, now: float) -> Callable[[], Coroutine[Any, Any, None]]:
        async def admit() -> None:
            if not await self._admit(key, now):
                self.request_cycle()

        return admit

    async def _evict(
        self,
        key: str,
        reason: str,
        message: str,
        now: float,
        *,
        preempted_reason: str | None = None,
        requeue_at: float | None = None,
    ) -> bool:
        await self.handed_off.settle(key)  # its admission, handed off by an earlier cycle, lands first
        workload = self._workload(key)
        if workload is None or workload.admission is None:
            # the server shows no admission to take away: the engine was behind; take the server's view
            self.mirror.resubmit(key, "no admission on the server to evict")
            return True
        if requeue_at is None and preempted_reason is not None:
            requeue_at = now  # preempted workloads go back to their queue at once
        document = workload.document
        patch = evicted_patch(document, reason, message, now, preempted_reason=preempted_reason, requeue_at=requeue_at)
        if not await self.writer.write(key, document, patch):
            self.mirror.resubmit(key, "its eviction was not written")
            # A victim that finished meanwhile (the usual 409) holds nothing on the server either:
            # what was decided to stand on its quota may go ahead.
            return not self.mirror.holds_quota_on_server(key)
        await self._event(workload, WARNING, "Preempted" if preempted_reason else "Evicted", message)
        return True

    async def _admit(self, key: str, now: float) -> bool:
        info = self.engine.workload(key)
        workload = self._workload(key)
        if info is None or info.admission is None or info.state is not WorkloadState.ADMITTED:
            return True  # undone meanwhile (deleted, finished)
        if workload is None or workload.admission is not None:
            # never admit what the server already shows admitted (or no longer has): take its view
            self.mirror.resubmit(key, "admitted or gone on the server already")
            return workload is None
        # read before the write: while it is in flight the next cycle may take the admission back
        # (a preemption, a finish), and ``info.admission`` is then None
        admission = info.admission
        document = workload.document
        if not await self.writer.write(key, document, admitted_patch(document, admission, now)):
            if not self.mirror.unsure(key):  # an admission that may have landed keeps its quota
                self.mirror.resubmit(key, "its admission was not written")
            refusal = self.writer.refusal(key)
            if refusal is not None:
                await self._hold_refused(key, workload, refusal, now)
            return False
        self.pending.forget(key)
        self.writer.admitted(key)
        if self.metrics is not None:
            self.metrics.admitted(admission.cluster_queue, now - (info.queue_order_time or info.created))
        await self._event(
            workload, NORMAL, "QuotaReserved", f"Quota reserved in ClusterQueue {admission.cluster_queue}"
        )
        return True

    async def _hold_refused(self, key: str, workload: WorkloadView, refusal: str, now: float) -> None:
        """An admission the API server refused as invalid is not retried at once: the same write
        would be refused again, every cycle. The workload waits out an exponential backoff (1 s,
        doubling, at most 5 minutes), and the refusal is told on the Workload once."""
        delay, first = self.writer.backoff_after_refusal(key)
        info = self.engine.workload(key)
        if info is None:
            return
        self.engine.hold_until(info, now + delay, f"the API server refused its admission: {refusal}")
        if first:
            await self._event(workload, WARNING, "AdmissionRefused", f"The API server refused the admission: {refusal}")

    async def _write_pending(self, now: float, heads: Iterable[str]) -> None:
        """QuotaReserved=False with the reason and position, only where it changed (``PendingStatus``
        decides which, so a long queue moving up is a trickle of writes, not a storm). Background
        writes: a cycle plans them only once the last plan's have landed (or were dropped)."""
        started = time.perf_counter()
        loop_now = asyncio.get_running_loop().time()
        writes = self.pending.plan(self.engine, self.mirror.freshest, self.mirror.busy, loop_now, now, heads)
        self._cycle_cost += time.perf_counter() - started
        for write in writes:
            await self.handed_off.hand_off(write.key, self._pending_write(write), background=True)

    def _pending_write(self, write: PendingWrite) -> Callable[[], Coroutine[Any, Any, None]]:
        async def land() -> None:
            if await self.writer.write(write.key, write.document, write.patch):
                self.pending.wrote(write.key, asyncio.get_running_loop().time())
                if write.event_message is not None:
                    await self._event(WorkloadView(write.document), NORMAL, "Pending", write.event_message)

        return land

    async def evict_for_node_failure(self, key: str, node: str) -> bool:
        """Evict an admitted gang from a failed node (Kueue's ``NodeFailures``); False if the write failed."""
        now = self.clock()
        message = f"Node {node} failed under the workload's pods; evicted to be placed again"
        evicted = self.engine.evict(key, "NodeFailures", now, message=message)
        if evicted is None:
            return True  # not admitted as far as the engine knows: nothing to take back
        ok = await self._evict(key, "NodeFailures", message, now, requeue_at=evicted.requeue_at)
        self.request_cycle()
        return ok

    async def write_node_failure_outcome(self, outcome: ReplacedPlacement | EvictedWorkload) -> bool:
        """Write what ``engine.node_failed`` decided for one gang; False if the write failed."""
        now = self.clock()
        if isinstance(outcome, EvictedWorkload):
            ok = await self._evict(outcome.key, outcome.reason, outcome.message, now, requeue_at=outcome.requeue_at)
            self.request_cycle()
            return ok
        await self.handed_off.settle(outcome.key)
        info = self.engine.workload(outcome.key)
        workload = self._workload(outcome.key)
        if info is None or info.admission is None or workload is None:
            return True
        document = workload.document
        if not await self.writer.write(outcome.key, document, admitted_patch(document, info.admission, now)):
            self.mirror.resubmit(outcome.key, "its new placement was not written")
            return False
        message = f"Node {outcome.node} failed; its pods were placed again in the same topology domain"
        await self._event(workload, WARNING, "NodeFailures", message)
        return True

    async def write_status(self, key: str, document: dict[str, Any], patch: dict[str, Any]) -> bool:
        # a pending reason not yet sent is moot after this write; any other write lands first
        if self.handed_off.drop_background(key) is not None:
            await self.handed_off.settle(key)
            return False  # ``document`` predates that write; the caller reconciles again from the cache
        return await self.writer.write(key, document, patch)

    # ------------------------------------------------------------------ writing

    def _workload(self, key: str) -> WorkloadView | None:
        # not the cache alone: right after our own write it may still show the revision before it
        document = self.mirror.freshest(key)
        return WorkloadView(document) if document is not None else None

    async def _event(self, workload: WorkloadView, event_type: str, reason: str, message: str) -> None:
        if self.events is not None:
            await self.events.record_on_workload(self.cache, workload, event_type, reason, message)


__all__ = ["QueueController", "workload_key"]
