"""A work queue of keys, shaped like client-go's ``util/workqueue`` (asyncio, one event loop).

Events only enqueue keys; workers take keys and reconcile them. A key is any hashable value: an
object's "namespace/name", or a typed request (``scheduler.controllers.requests``); two keys are
the same key when they are equal. The queue keeps three promises:

- a key waiting in the queue is not queued twice (``dirty``): ten events on one object before a
  worker gets to it cost one reconcile;
- a key being processed is never handed to a second worker (``processing``); if it is added
  meanwhile it is queued again when the first worker calls ``done`` — the change is not lost;
- failures back off per key (``add_rate_limited``): ``base_delay`` doubling up to ``max_delay``,
  until ``forget`` resets that key after a success.

``add_after`` keeps the earliest time asked for a key, so a burst of delayed adds (a debounce)
fires once, at the first deadline.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self, *, base_delay: float = 0.005, max_delay: float = 60.0, name: str = "") -> None:
        if not 0 < base_delay <= max_delay:
            raise ValueError(f"work queue {name!r}: need 0 < base_delay <= max_delay (got {base_delay}, {max_delay})")
        self.name = name
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()  # waiting to be processed (queued, or re-added while processing)
        self._processing: set[K] = set()
        self._failures: dict[K, int] = {}
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: K) -> None:
        """Queue ``key`` unless it is already waiting; a key being processed is queued again on ``done``."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._wake_one()

    def add_after(self, key: K, seconds: float) -> None:
        """Queue ``key`` after ``seconds``; an earlier pending deadline for the key wins."""
        if self._shutting_down:
            return
        if seconds <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        existing = self._timers.get(key)
        if existing is not None:
            if existing.when() <= loop.time() + seconds:
                return
            existing.cancel()
        self._timers[key] = loop.call_later(seconds, self._fire, key)

    def add_rate_limited(self, key: K) -> None:
        """Queue ``key`` after its backoff: ``base_delay * 2**failures``, capped at ``max_delay``."""
        self.add_after(key, self.backoff_delay(key))
        self._failures[key] = self._failures.get(key, 0) + 1

    def backoff_delay(self, key: K) -> float:
        """The delay the next ``add_rate_limited(key)`` waits."""
        failures = self._failures.get(key, 0)
        if failures > 60:  # 2**60 * any sane base is far past any cap; avoid float overflow
            return self.max_delay
        return min(self.base_delay * float(2**failures), self.max_delay)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff (after it reconciled successfully)."""
        self._failures.pop(key, None)

    async def get(self) -> K | None:
        """The next key (now marked processing), waiting for one; ``None`` once shut down."""
        while not self._queue:
            if self._shutting_down:
                return None
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif self._queue:
                    self._wake_one()  # we were woken for a key and will not take it: pass the turn on
                raise
        if self._shutting_down:
            return None
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: K) -> None:
        """``key`` is processed; if it was added meanwhile it goes back in the queue now."""
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._wake_one()

    def shutdown(self) -> None:
        """Stop handing out keys: every ``get`` (waiting or future) returns ``None``; timers are dropped."""
        self._shutting_down = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
