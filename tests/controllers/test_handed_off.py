"""HandedOffWrites on its own: writes to one Workload in order, settle, a failing write kept apart."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from scheduler.controllers.queueing.handed_off import HandedOffWrites
from tests.background import in_background
from tests.eventually import eventually


@contextlib.asynccontextmanager
async def running(writes: HandedOffWrites) -> AsyncIterator[asyncio.Task[None]]:
    async with in_background(writes.run()) as task:
        await asyncio.sleep(0)  # the task group is up before the first hand-off
        yield task


def gated(log: list[str], name: str, gate: asyncio.Event | None = None) -> Callable[[], Coroutine[Any, Any, None]]:
    async def write() -> None:
        log.append(f"{name} started")
        if gate is not None:
            await gate.wait()
        log.append(f"{name} landed")

    return write


async def test_without_a_running_group_a_write_is_awaited_at_once() -> None:
    log: list[str] = []
    await HandedOffWrites().hand_off("ns/a", gated(log, "a"))
    assert log == ["a started", "a landed"]


async def test_writes_to_one_workload_land_in_order_and_settle_waits_for_them() -> None:
    writes = HandedOffWrites()
    log: list[str] = []
    gate = asyncio.Event()
    async with running(writes):
        await writes.hand_off("ns/a", gated(log, "first", gate))
        await writes.hand_off("ns/a", gated(log, "second"))
        await writes.hand_off("ns/b", gated(log, "other"))
        await eventually(lambda: "other landed" in log, what="another Workload's write, not held")
        assert "second started" not in log
        assert writes.busy("ns/a")
        settling = asyncio.create_task(writes.settle("ns/a"))
        await asyncio.sleep(0.05)
        assert not settling.done()
        gate.set()
        await settling
    assert log.index("first landed") < log.index("second started")
    assert not writes.busy("ns/a")
    assert writes.in_flight == 0


async def test_a_failing_write_is_logged_and_the_others_still_land(caplog: pytest.LogCaptureFixture) -> None:
    writes = HandedOffWrites()
    log: list[str] = []

    async def broken() -> None:
        raise ValueError("a bug in one write")

    with caplog.at_level(logging.ERROR):
        async with running(writes) as task:
            await writes.hand_off("ns/a", broken)
            await writes.hand_off("ns/a", gated(log, "after"))
            await writes.hand_off("ns/b", gated(log, "other"))
            await writes.settle("ns/a")
            await writes.settle("ns/b")
            assert not task.done()
    assert sorted(log) == ["after landed", "after started", "other landed", "other started"]
    assert "Workload ns/a failed" in caplog.text
