"""The controller runtime: bounded workers, retries with backoff, requeue_after, one key at a time."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator

from scheduler.controllers.runtime import Controller, ReconcileResult
from scheduler.controllers.workqueue import WorkQueue
from tests.eventually import eventually


class Recorder:
    name = "recorder"

    def __init__(self, *, fail_times: int = 0, delay: float = 0.0, requeue_after: float | None = None) -> None:
        self.fail_times = fail_times
        self.delay = delay
        self.requeue_after = requeue_after
        self.calls: Counter[str] = Counter()
        self.active: set[str] = set()
        self.overlaps = 0
        self.max_concurrent = 0
        self.prepared = 0

    async def prepare(self) -> None:
        self.prepared += 1

    async def reconcile(self, key: str) -> ReconcileResult:
        if key in self.active:
            self.overlaps += 1
        self.active.add(key)
        self.max_concurrent = max(self.max_concurrent, len(self.active))
        try:
            self.calls[key] += 1
            await asyncio.sleep(self.delay)
            if self.calls[key] <= self.fail_times:
                raise RuntimeError(f"failure {self.calls[key]} of {key}")
            return ReconcileResult(requeue_after=self.requeue_after if self.calls[key] == 1 else None)
        finally:
            self.active.discard(key)


@contextlib.asynccontextmanager
async def running(controller: Controller) -> AsyncIterator[None]:
    task = asyncio.create_task(controller.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_failing_reconcile_is_retried_with_backoff_then_forgotten() -> None:
    recorder = Recorder(fail_times=3)
    controller = Controller(recorder, workers=2, queue=WorkQueue(base_delay=0.01, max_delay=0.1))
    loop = asyncio.get_running_loop()
    async with running(controller):
        start = loop.time()
        controller.queue.add("ns/a")
        await eventually(lambda: recorder.calls["ns/a"] == 4, interval=0.005)
        elapsed = loop.time() - start
    assert elapsed >= 0.01 + 0.02 + 0.04 - 0.005  # three backoffs, doubling
    assert controller.errors == 3
    assert controller.queue.num_requeues("ns/a") == 0  # success forgot the backoff
    assert recorder.prepared == 1


async def test_one_key_is_never_reconciled_by_two_workers_at_once() -> None:
    recorder = Recorder(delay=0.02)
    controller = Controller(recorder, workers=4)
    async with running(controller):
        for _ in range(5):
            for key in ("a", "b", "c"):
                controller.queue.add(key)
            await asyncio.sleep(0.007)
        await eventually(lambda: not recorder.active and len(controller.queue) == 0, interval=0.005)
        await asyncio.sleep(0.05)
    assert recorder.overlaps == 0
    assert recorder.max_concurrent >= 2  # different keys do run side by side
    assert all(2 <= n <= 5 for n in recorder.calls.values())  # deduplicated, yet re-run after changes


async def test_requeue_after_reconciles_again_later() -> None:
    recorder = Recorder(requeue_after=0.05)
    controller = Controller(recorder, workers=1)
    loop = asyncio.get_running_loop()
    async with running(controller):
        start = loop.time()
        controller.queue.add("a")
        await eventually(lambda: recorder.calls["a"] == 2, interval=0.005)
        assert loop.time() - start >= 0.045
        await asyncio.sleep(0.1)
    assert recorder.calls["a"] == 2  # the second result asked for nothing more


async def test_cancelling_the_controller_stops_a_reconcile_midway() -> None:
    recorder = Recorder(delay=10)
    controller = Controller(recorder, workers=1)
    async with running(controller):
        controller.queue.add("a")
        await eventually(lambda: "a" in recorder.active, interval=0.005)
    assert not recorder.active  # cancelled inside the reconcile
    controller.queue.add("a")  # the key is no longer held as processing
    assert len(controller.queue) == 1


class WithWorkAlongside(Recorder):
    """A reconciler that also runs work of its own while its controller runs."""

    def __init__(self) -> None:
        super().__init__()
        self.alongside = "not started"

    async def run_alongside(self) -> None:
        self.alongside = "running"
        try:
            await asyncio.Event().wait()
        finally:
            self.alongside = "stopped"


async def test_work_alongside_runs_with_the_workers_and_stops_with_them() -> None:
    cancelled = WithWorkAlongside()
    async with running(Controller(cancelled, workers=1)):
        await eventually(lambda: cancelled.alongside == "running", what="the work alongside started")
    assert cancelled.alongside == "stopped"  # cancelled with the workers (a lost lease)

    shut_down = WithWorkAlongside()
    controller = Controller(shut_down, workers=1)
    task = asyncio.create_task(controller.run())
    await eventually(lambda: shut_down.alongside == "running", what="the work alongside started")
    controller.queue.shutdown()
    await asyncio.wait_for(task, 5)  # the workers returned: the run ends, the work alongside with it
    assert shut_down.alongside == "stopped"
