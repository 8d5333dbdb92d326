"""ClusterQueue and LocalQueue status, written as Kueue's queue controllers write it, and throttled.

In standalone mode nobody else writes these: without them ``kubectl get clusterqueues`` shows
empty PENDING WORKLOADS / ADMITTED WORKLOADS columns. The figures come from the queue
controller's engine (``scheduler.queues.status``); this reconciler compares them with the cached
object and writes the difference with the resourceVersion it read.

Throttled as Kueue batches them (``constants.UpdatesBatchPeriod``, one second): a queue's status
is written at most once per ``batch_period``; a change within the period is written when it ends
(the key comes back then), so a busy queue costs one write a second however many cycles run.
Keys are ``ClusterQueue/NAME`` and ``LocalQueue/NAMESPACE/NAME`` (``QueueKey``); a Workload's
change enqueues its LocalQueue and ClusterQueue, a ResourceFlavor's or Topology's every
ClusterQueue (whether a queue is active depends on them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.conditions import conditions_of, find_condition, set_condition
from scheduler.controllers.queueing.engine_mirror import only_status_changed
from scheduler.controllers.runtime import ReconcileResult
from scheduler.engine import AdmissionEngine
from scheduler.kube import KubeClient, patch_status
from scheduler.queues.status import ACTIVE, CheckStates, cluster_queue_status, local_queue_status, tally_queues

log = logging.getLogger(__name__)

BATCH_PERIOD = 1.0  # Kueue's UpdatesBatchPeriod
# A key waiting for the queue controller's next cycle comes back when that cycle has decided
# (``cycle_ran``, called by the queue controller); this slow look is only the fallback should that
# call never come. Looking every 0.1 s instead was 7 of 17 CPU seconds of `bench admission --real`
# at 1,000 Workloads, and every lockstep instant of the sandbox waited on the timer.
_NOT_READY_FALLBACK = 5 * BATCH_PERIOD
# The tally of every queue is one pass over all Workloads; with thousands waiting and Workloads
# changing many times a second it is worked out again no sooner than this, nor than twenty times
# what the last one took (keys come back for it).
_TALLY_PERIOD = 0.5 * BATCH_PERIOD
_OWNED = ("pendingWorkloads", "reservingWorkloads", "admittedWorkloads", "flavorsReservation", "flavorsUsage")
# What the figures depend on: a change of any of these invalidates the tally of every queue.
_INPUT_KINDS = ("Workload", "ClusterQueue", "LocalQueue", "ResourceFlavor", "Topology", "Cohort")


@dataclass(frozen=True)
class QueueKey:
    """What a reconcile of this controller is about: a ClusterQueue or a LocalQueue."""

    kind: str  # ClusterQueue | LocalQueue
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"

    @classmethod
    def parse(cls, key: str) -> QueueKey:
        kind, _, rest = key.partition("/")
        if kind == "LocalQueue":
            namespace, _, name = rest.partition("/")
            return cls(kind, name, namespace)
        return cls(kind, rest)


def _queue_keys_of_workload(cache: ClusterCache, document: dict[str, Any] | None) -> list[str]:
    if document is None:
        return []
    metadata = document.get("metadata") or {}
    namespace = metadata.get("namespace") or "default"
    queue_name = (document.get("spec") or {}).get("queueName")
    keys = []
    if queue_name:
        keys.append(str(QueueKey("LocalQueue", str(queue_name), namespace)))
        local_queue = cache.get("LocalQueue", str(queue_name), namespace)
        if local_queue is not None and (local_queue.get("spec") or {}).get("clusterQueue"):
            keys.append(str(QueueKey("ClusterQueue", str(local_queue["spec"]["clusterQueue"]))))
    admission = (document.get("status") or {}).get("admission") or {}
    if admission.get("clusterQueue"):
        keys.append(str(QueueKey("ClusterQueue", str(admission["clusterQueue"]))))
    return keys


def check_states(cache: ClusterCache) -> CheckStates:
    """The admission check states each cached Workload's status carries, by workload key."""
    from scheduler.api.kueue import AdmissionCheckState

    given: dict[str, dict[str, AdmissionCheckState]] = {}
    for document in cache.list("Workload"):
        states = (document.get("status") or {}).get("admissionChecks") or []
        if states:
            metadata = document["metadata"]
            key = f"{metadata.get('namespace') or 'default'}/{metadata['name']}"
            given[key] = {s["name"]: AdmissionCheckState.model_validate(s) for s in states if s.get("name")}
    return given


class QueueStatusController:
    name = "queue-status"

    def __init__(
        self,
        client: KubeClient,
        cache: ClusterCache,
        engine: Callable[[], AdmissionEngine | None],
        *,
        cycle_due: Callable[[], bool],
        batch_period: float = BATCH_PERIOD,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.cache = cache
        self.engine = engine  # None while the queue controller has not built this term's engine
        # Whether the queue controller has a cycle to run for an input the engine has taken in but
        # not decided on yet (a new ClusterQueue, a deleted flavor, a new Workload): figures read
        # now would be the last cycle's. A change that asks for no cycle (the echo of a decision
        # the engine made itself, a status-only write) waits for none.
        self.cycle_due = cycle_due
        self.batch_period = batch_period
        self.clock = clock
        self._written: dict[str, float] = {}  # key -> loop time of its last status write
        self._awaiting_cycle: set[str] = set()  # keys to look at again once the next cycle has decided
        self._enqueue: Callable[[str], None] | None = None  # set by bind()
        self.writes = 0
        # One tally of every queue serves all keys until an input changes (a new term's resync
        # enqueues every queue at once: one pass over the workloads, not one per queue).
        self._changes = 0
        self._tally: tuple[tuple[int, int], Any] | None = None
        self._tally_at = 0.0  # loop time the tally was worked out
        self._tally_cost = 0.0  # seconds working it out took
        for kind in _INPUT_KINDS:
            cache.on_change(kind, self._input_changed)

    def bind(self, enqueue: Callable[[str], None]) -> None:
        """Give the controller its work queue's ``add`` (for the keys that wait on a cycle)."""
        self._enqueue = enqueue

    def cycle_ran(self) -> None:
        """The queue controller's engine has decided a cycle: the keys that waited for it come back."""
        if self._enqueue is None:
            return
        waiting, self._awaiting_cycle = self._awaiting_cycle, set()
        for key in waiting:
            self._enqueue(key)

    def _input_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if old is not None and new is not None and new.get("kind") != "Workload" and only_status_changed(old, new):
            return  # a queue's status (our own write's echo, mostly): no figure depends on it
        self._changes += 1

    def enqueue_map(self) -> dict[str, Callable[[dict[str, Any] | None, dict[str, Any] | None], Iterable[str]]]:
        def own(kind: str) -> Callable[[dict[str, Any] | None, dict[str, Any] | None], list[str]]:
            def keys(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
                document = new if new is not None else old
                metadata = (document or {}).get("metadata") or {}
                return [str(QueueKey(kind, str(metadata.get("name")), metadata.get("namespace")))] if metadata else []

            return keys

        def workload(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
            return list(
                dict.fromkeys(_queue_keys_of_workload(self.cache, old) + _queue_keys_of_workload(self.cache, new))
            )

        def every_cluster_queue(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
            return [str(QueueKey("ClusterQueue", str(d["metadata"]["name"]))) for d in self.cache.list("ClusterQueue")]

        return {
            "ClusterQueue": own("ClusterQueue"),
            "LocalQueue": own("LocalQueue"),
            "Workload": workload,
            "ResourceFlavor": every_cluster_queue,
            "Topology": every_cluster_queue,
        }

    async def reconcile(self, key: str) -> ReconcileResult:
        target = QueueKey.parse(key)
        document = self.cache.get(target.kind, target.name, target.namespace)
        engine = self.engine()
        if document is None:
            self._written.pop(key, None)
            return ReconcileResult()
        if engine is None or self.cycle_due():
            self._awaiting_cycle.add(key)  # the next cycle takes the change in, then ``cycle_ran``
            return ReconcileResult(requeue_after=_NOT_READY_FALLBACK)
        loop = asyncio.get_running_loop()
        wait = self._tally_wait(engine, loop.time())
        if wait > 0:
            return ReconcileResult(requeue_after=wait)  # the inputs changed since the last tally, just made
        desired = self._desired(engine, target, loop.time())
        if desired is None:
            return ReconcileResult()  # the engine does not know it (yet): its own change comes back
        patch = self._patch(document, desired)
        if patch is None:
            return ReconcileResult()
        wait = self._written.get(key, -self.batch_period) + self.batch_period - loop.time()
        if wait > 0:
            return ReconcileResult(requeue_after=wait)  # within the batch period: written when it ends
        metadata = document["metadata"]
        await patch_status(
            self.client,
            target.kind,
            target.name,
            target.namespace,
            patch,
            resource_version=str(metadata.get("resourceVersion")),
        )
        self._written[key] = loop.time()
        self.writes += 1
        return ReconcileResult()

    def _tally_wait(self, engine: AdmissionEngine, now: float) -> float:
        """Seconds until the tally may be worked out again, where it is out of date (else 0)."""
        if self._tally is None or self._tally[0] == (id(engine), self._changes):
            return 0.0
        return max(0.0, self._tally_at + max(_TALLY_PERIOD, 20.0 * self._tally_cost) - now)

    def _desired(self, engine: AdmissionEngine, target: QueueKey, now: float) -> dict[str, Any] | None:
        fingerprint = (id(engine), self._changes)
        if self._tally is None or self._tally[0] != fingerprint:
            started = time.perf_counter()
            self._tally = (fingerprint, tally_queues(engine, check_states(self.cache)))
            self._tally_at, self._tally_cost = now, time.perf_counter() - started
        by_cq, by_lq = self._tally[1]
        if target.kind == "ClusterQueue":
            return cluster_queue_status(engine, target.name, by_cq)
        return local_queue_status(engine, target.namespace or "default", target.name, by_lq)

    def _patch(self, document: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any] | None:
        """The merge patch that brings the object's status to ``desired``, or None if it is there."""
        current = document.get("status") or {}
        patch = {field: desired[field] for field in _OWNED if current.get(field) != desired[field]}
        wanted = find_condition(desired["conditions"], ACTIVE)
        assert wanted is not None
        conditions = conditions_of(document)
        generation = (document.get("metadata") or {}).get("generation")
        if set_condition(
            conditions,
            ACTIVE,
            wanted["status"] == "True",
            str(wanted["reason"]),
            str(wanted["message"]),
            generation=int(generation) if generation is not None else None,
            now=self.clock(),
        ):
            patch["conditions"] = conditions
        return patch or None
