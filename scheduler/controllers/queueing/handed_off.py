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

Pending reasons are background writes: at most ``background_slots`` of them in flight, and one
that has not begun is dropped when anything else is decided about its Workload (an admission, an
eviction, a newer reason), since the reason it carries is moot by then. A burst of arrivals gives
thousands of Workloads a reason to write; when those writes sat in the same per-Workload order as
the admissions, an arrival's admission waited for its own queued reason, behind two thousand
others, and the real kube-apiserver saw no admission for ten seconds and more. A dropped reason
costs nothing: the next plan finds it unwritten and writes what is true then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class HandedOffWrites:
    def __init__(self, background_slots: int = 4) -> None:
        self._group: asyncio.TaskGroup | None = None
        self._by_key: dict[str, asyncio.Task[None]] = {}  # the last write handed off per Workload key
        self._before: dict[asyncio.Task[None], asyncio.Task[None] | None] = {}  # each write's predecessor
        self._unstarted: set[asyncio.Task[None]] = set()  # background writes not begun: may be dropped
        self._background: set[asyncio.Task[None]] = set()  # background writes not landed
        self._background_slots = asyncio.Semaphore(background_slots)

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
        """Whether a write to ``key`` was handed off and has not landed yet (a background write
        that has not begun does not count: anything decided meanwhile drops it)."""
        return self._last_kept(key) is not None

    @property
    def in_flight(self) -> int:
        return len(self._by_key)

    @property
    def background_in_flight(self) -> int:
        """Background writes handed off and neither landed nor dropped."""
        return len(self._background)

    async def settle(self, key: str) -> None:
        """Drop ``key``'s background writes that have not begun, and wait until the rest (if
        any) have landed or failed."""
        task = self.drop_background(key)
        if task is not None:
            await asyncio.wait({task})  # asyncio.wait: cancelling the waiter leaves the write alone

    def drop_background(self, key: str) -> asyncio.Task[None] | None:
        """Cancel ``key``'s background write if it has not begun; the write left last for ``key``."""
        task = self._by_key.get(key)
        if task is not None and task in self._unstarted:
            task.cancel()  # never sent: nothing on the server to wonder about
            self._unstarted.discard(task)
            self._background.discard(task)
            task = self._before.get(task)
        kept = task if task is not None and not task.done() else None
        if kept is None:
            self._by_key.pop(key, None)
        else:
            self._by_key[key] = kept
        return kept

    def _last_kept(self, key: str) -> asyncio.Task[None] | None:
        # Each hand-off drops the write before it if that one has not begun, so only the last
        # write handed off for a key can be an unsent background one.
        task = self._by_key.get(key)
        if task is not None and task in self._unstarted:
            task = self._before.get(task)
        return task if task is not None and not task.done() else None

    async def hand_off(
        self, key: str, write: Callable[[], Coroutine[Any, Any, None]], *, background: bool = False
    ) -> None:
        """Run ``write`` for Workload ``key`` after any earlier write to it (dropping its earlier
        background writes that have not begun); returns at once while the controller runs, else
        after the write. ``background``: a write that may be dropped until it begins."""
        if self._group is None:
            await self._guarded(key, write)
            return
        previous = self.drop_background(key)

        async def land() -> None:
            if previous is not None:
                await asyncio.wait({previous})
            if not background:
                await self._guarded(key, write)
                return
            async with self._background_slots:
                self._unstarted.discard(task)  # from here on it is sent, and lands or fails
                await self._guarded(key, write)

        task = self._group.create_task(land(), name=f"write {key}")
        self._by_key[key] = task
        self._before[task] = previous
        if background:
            self._unstarted.add(task)
            self._background.add(task)
        task.add_done_callback(lambda done: self._landed(key, done))

    def _landed(self, key: str, task: asyncio.Task[None]) -> None:
        self._before.pop(task, None)
        self._unstarted.discard(task)
        self._background.discard(task)
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
