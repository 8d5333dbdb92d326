"""Reconcilers and the controller that runs them, shaped like controller-runtime's.

A ``Reconciler`` converges one key ("namespace/name", or "name" for cluster-scoped objects; or a
typed request from ``scheduler.controllers.requests`` where one reconciler answers for several
kinds of thing) to its desired state: it reads the cache, computes what should be, and writes only the difference.
It is level-triggered: it never sees the event that queued the key, so reconciling a key twice,
or after a restart, gives the same result.

``Controller`` runs a bounded number of workers over a ``WorkQueue``: an exception is logged
and the key retried with its per-key backoff; a success forgets the backoff; ``requeue_after``
asks for another look after that many seconds (a timeout, a poll).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

import aiohttp

from scheduler.controllers.workqueue import WorkQueue
from scheduler.kube.errors import KubeApiError

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


@dataclass
class ReconcileResult:
    """What a reconcile asks of its queue: nothing (done), a look after ``requeue_after`` seconds,
    or ``requeue``: an expected, partial failure (a write the server refused): retried with the
    key's backoff, as controller-runtime's ``Result{Requeue: true}``, without an error logged."""

    requeue_after: float | None = None  # seconds until this key should be reconciled again
    requeue: bool = False


class Reconciler(Protocol[K_contra]):
    name: str

    async def reconcile(self, key: K_contra) -> ReconcileResult: ...


@runtime_checkable
class PreparesOnStart(Protocol):
    """A reconciler with state to rebuild from the cache each time its controller starts (leading begins)."""

    async def prepare(self) -> None: ...


@runtime_checkable
class KnowsSettledKeys(Protocol[K_contra]):
    """A reconciler that can tell, from the cache alone and cheaply, that a key needs nothing.

    A new leadership term enqueues every cached object once (what changed while standing by is
    reconciled then). On a cluster that has run for months most of those are finished jobs whose
    end is fully recorded; reconciling each only to find nothing to do costs a new leader seconds
    per ten thousand jobs before its first useful write. ``settled`` answers True only for a key
    whose reconcile would write nothing (a change later still enqueues it through its watch).
    """

    def settled(self, key: K_contra) -> bool: ...


@runtime_checkable
class RunsAlongside(Protocol):
    """A reconciler with work of its own that lives while its controller runs (writes a reconcile
    handed off): started with the workers and cancelled with them, as when the lease is lost."""

    async def run_alongside(self) -> None: ...


# Reconciles in flight per controller. A reconcile spends its time awaiting the API server (a
# launch is three writes in a row), so the workers bound how many jobs move at once, not CPU: at
# 4, on a real kube-apiserver, the launcher made about 20 JobSets a second while TrainJobs came
# at 50 (bench controller --real); the work queue still runs one key at a time.
DEFAULT_WORKERS = 16


class Controller(Generic[K]):
    def __init__(
        self, reconciler: Reconciler[K], *, workers: int = DEFAULT_WORKERS, queue: WorkQueue[K] | None = None
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {reconciler.name!r} needs at least one worker (got {workers})")
        self.reconciler = reconciler
        self.workers = workers
        self.queue: WorkQueue[K] = queue if queue is not None else WorkQueue(name=reconciler.name)
        self.reconciles = 0
        self.errors = 0

    @property
    def name(self) -> str:
        return self.reconciler.name

    async def run(self) -> None:
        """Run the workers until cancelled or the queue shuts down.

        A reconciler that ``prepare``s does so first; cancelling ``run`` cancels the workers
        mid-reconcile (a leader that lost its lease must stop writing at once), and what the
        reconciler runs alongside them.
        """
        if isinstance(self.reconciler, PreparesOnStart):
            await self.reconciler.prepare()
        async with asyncio.TaskGroup() as tasks:
            beside = None
            if isinstance(self.reconciler, RunsAlongside):
                beside = tasks.create_task(self.reconciler.run_alongside(), name=f"{self.name}-alongside")
            workers = [tasks.create_task(self._work(), name=f"{self.name}-worker-{i}") for i in range(self.workers)]
            await asyncio.wait(workers)
            if beside is not None:
                beside.cancel()  # the queue shut down: nothing is left to reconcile

    async def _work(self) -> None:
        while True:
            key = await self.queue.get()
            if key is None:
                return
            try:
                await self._reconcile(key)
            finally:
                self.queue.done(key)

    async def _reconcile(self, key: K) -> None:
        self.reconciles += 1
        try:
            result = await self.reconciler.reconcile(key)
        except (KubeApiError, aiohttp.ClientError, OSError, TimeoutError) as error:
            # What a busy or flaky API server answers (409, 429, 5xx, a dropped connection): the
            # retry is the remedy, so one line, not a traceback.
            self.errors += 1
            log.warning(
                "%s: reconciling %s: %s; retrying in %.3fs", self.name, key, error, self.queue.backoff_delay(key)
            )
            self.queue.add_rate_limited(key)
            return
        except Exception:
            self.errors += 1
            log.exception("%s: reconciling %s failed; retrying in %.3fs", self.name, key, self.queue.backoff_delay(key))
            self.queue.add_rate_limited(key)
            return
        if result.requeue:
            self.queue.add_rate_limited(key)
            return
        self.queue.forget(key)
        if result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after)
