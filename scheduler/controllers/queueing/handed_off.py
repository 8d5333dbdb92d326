"""Status writes a cycle hands off, landing while the next cycle decides.

Kueue's scheduler gives each admission's write to a goroutine and starts its next cycle at once;
a cycle that awaited every write before the next could start left freed quota and new arrivals
waiting for seconds on a busy API server. The queue controller still awaits a cycle's evictions
(no later cycle may hand out quota an eviction in flight may keep, should it be refused); its
admissions and pending-status writes are handed off here.

Writes are kept per Workload: a later write to the same Workload runs after the earlier one has
landed, and whatever is decided next about a Workload (an eviction, a node failure) first waits
for its handed-off write (``settle``), so it reads that write's answer and never a revision the
server has already moved past. The writes live in a task group of the controller's run
(``run``, started beside the workers), so a replica that loses its lease cancels them with its
workers. Without a running group (a reconcile called on its own) a write is awaited at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class HandedOffWrites:
    def __init__(self) -> None:
        self._group: asyncio.TaskGroup | None = None
        self._by_key: dict[str, asyncio.Task[None]] = {}  # the last write handed off per Workload key

    async def run(self) -> None:
        """Hold the task group the writes run in; until cancelled (cancelling every write in flight)."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            try:
                await asyncio.Event().wait()
            finally:
                self._group = None
                self._by_key.clear()

    def busy(self, key: str) -> bool:
        """Whether a write to ``key`` was handed off and has not landed yet."""
        return key in self._by_key

    @property
    def in_flight(self) -> int:
        return len(self._by_key)

    async def settle(self, key: str) -> None:
        """Wait until the write handed off for ``key`` (if any) has landed or failed."""
        task = self._by_key.get(key)
        if task is not None:
            await asyncio.wait({task})  # asyncio.wait: cancelling the waiter leaves the write alone

    async def hand_off(self, key: str, write: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``write`` for Workload ``key`` after any earlier write to it; returns at once while
        the controller runs, else after the write."""
        if self._group is None:
            await self._guarded(key, write)
            return
        previous = self._by_key.get(key)

        async def land() -> None:
            if previous is not None:
                await asyncio.wait({previous})
            await self._guarded(key, write)

        task = self._group.create_task(land(), name=f"write {key}")
        self._by_key[key] = task
        task.add_done_callback(lambda done: self._landed(key, done))

    def _landed(self, key: str, task: asyncio.Task[None]) -> None:
        if self._by_key.get(key) is task:
            del self._by_key[key]

    @staticmethod
    async def _guarded(key: str, write: Callable[[], Coroutine[Any, Any, None]]) -> None:
        # A bug in one write must not cancel the task group, and with it every other write.
        try:
            await write()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("writing the status of Workload %s failed; the next cycle reconciles it again", key)
