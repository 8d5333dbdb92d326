"""The little reconcile loop every stand-in runs: a deduplicated key queue and a few workers.

A key waiting in the queue is not queued twice; a key being reconciled is not reconciled by a
second worker at the same time (it is queued again for after). A reconcile that raises is
retried with a per-key exponential backoff, so a server injecting faults slows the stand-ins
down without stopping them. ``after(key, seconds)`` schedules a key for later (timers).
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod

from scheduler.kube import Backoff, KubeApiError

from .cache import Key

log = logging.getLogger(__name__)


class KeyQueue:
    def __init__(self) -> None:
        self._queue: asyncio.Queue[Key] = asyncio.Queue()
        self._waiting: set[Key] = set()
        self._busy: set[Key] = set()
        self._again: set[Key] = set()
        self._timers: dict[Key, asyncio.TimerHandle] = {}

    def add(self, key: Key) -> None:
        if key in self._busy:
            self._again.add(key)
        elif key not in self._waiting:
            self._waiting.add(key)
            self._queue.put_nowait(key)

    def after(self, key: Key, seconds: float) -> None:
        """Add ``key`` in ``seconds`` (an earlier timer for the key wins)."""
        loop = asyncio.get_running_loop()
        when = loop.time() + max(seconds, 0.0)
        current = self._timers.get(key)
        if current is not None and not current.cancelled() and current.when() <= when:
            return
        if current is not None:
            current.cancel()
        self._timers[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: Key) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def take(self) -> Key:
        key = await self._queue.get()
        self._waiting.discard(key)
        self._busy.add(key)
        return key

    def done(self, key: Key) -> None:
        self._busy.discard(key)
        if key in self._again:
            self._again.discard(key)
            self.add(key)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def __len__(self) -> int:
        return self._queue.qsize()


class Reconciler(ABC):
    """Subclasses implement ``reconcile(key)``; ``run()`` works the queue until cancelled."""

    name = "reconciler"

    def __init__(self, *, workers: int = 4, backoff: Backoff | None = None) -> None:
        self.queue = KeyQueue()
        self.workers = workers
        self._backoff_template = backoff or Backoff(initial=0.05, maximum=2.0)
        self._backoffs: dict[Key, Backoff] = {}
        self.reconciles = 0
        self.errors = 0
        self.conflicts = 0

    @abstractmethod
    async def reconcile(self, key: Key) -> None:
        """Bring the object named by ``key`` to its desired state (read the cache, write the difference)."""

    def start_workers(self) -> list[asyncio.Task[None]]:
        """The worker tasks; whoever starts them cancels them (``Standins.stop`` does)."""
        loop = asyncio.get_running_loop()
        return [loop.create_task(self._work(), name=f"{self.name}-worker-{index}") for index in range(self.workers)]

    async def run(self) -> None:
        """Work the queue until cancelled (the workers as one task, for use without ``Standins``)."""
        try:
            async with asyncio.TaskGroup() as tasks:
                for index in range(self.workers):
                    tasks.create_task(self._work(), name=f"{self.name}-worker-{index}")
        finally:
            self.queue.close()

    async def _work(self) -> None:
        while True:
            key = await self.queue.take()
            try:
                self.reconciles += 1
                await self.reconcile(key)
            except asyncio.CancelledError:
                raise
            except KubeApiError as error:
                if error.status != 409:
                    self._failed(key, error)
                else:
                    # a write based on a cache that is behind: the newer object's event requeues the key;
                    # a short timer covers a conflict with no newer object (an injected one)
                    self.conflicts += 1
                    self.queue.after(key, 0.05)
            except Exception as error:
                self._failed(key, error)
            else:
                self._backoffs.pop(key, None)
            finally:
                self.queue.done(key)

    def _failed(self, key: Key, error: Exception) -> None:
        self.errors += 1
        backoff = self._backoffs.setdefault(
            key, Backoff(initial=self._backoff_template.initial, maximum=self._backoff_template.maximum)
        )
        delay = backoff.next_delay(error.retry_after if isinstance(error, KubeApiError) else None)
        log.info("%s: reconciling %s failed (%s); again in %.2fs", self.name, key, error, delay)
        self.queue.after(key, delay)
