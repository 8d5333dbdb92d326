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


async def hold_the_one_slot(
    writes: HandedOffWrites, key: str, write: Callable[[], Coroutine[Any, Any, None]], log: list[str]
) -> None:
    """Hand off a background write and wait until it is sent (holding a one-slot pool)."""
    before = len(log)
    await writes.hand_off(key, write, background=True)
    await eventually(lambda: len(log) > before, what=f"the background write to {key} sent")


async def test_a_background_write_not_begun_is_dropped_for_a_decision_on_its_workload() -> None:
    writes = HandedOffWrites(background_slots=1)
    log: list[str] = []
    gate = asyncio.Event()
    async with running(writes):
        await writes.hand_off("ns/a", gated(log, "reason a", gate), background=True)  # takes the one slot
        await writes.hand_off("ns/b", gated(log, "reason b"), background=True)  # waits for a slot
        await eventually(lambda: "reason a started" in log, what="the first reason sent")
        assert writes.background_in_flight == 2
        assert writes.busy("ns/a")
        assert not writes.busy("ns/b")  # b's reason may still be dropped
        await writes.hand_off("ns/b", gated(log, "admission b"))
        await eventually(lambda: "admission b landed" in log, what="b's admission, not held by the slot")
        assert writes.background_in_flight == 1
        gate.set()
        await writes.settle("ns/a")
    assert "reason b started" not in log
    assert log.index("reason a started") < log.index("admission b landed")


async def test_a_background_write_already_sent_lands_before_the_next_write_to_its_workload() -> None:
    writes = HandedOffWrites(background_slots=1)
    log: list[str] = []
    gate = asyncio.Event()
    async with running(writes):
        await hold_the_one_slot(writes, "ns/a", gated(log, "reason", gate), log)
        await writes.hand_off("ns/a", gated(log, "admission"))
        await asyncio.sleep(0.05)
        assert "admission started" not in log  # never a revision the server has moved past
        gate.set()
        await writes.settle("ns/a")
    assert log == ["reason started", "reason landed", "admission started", "admission landed"]


async def test_settle_drops_the_reasons_not_sent_and_a_newer_reason_replaces_an_older_one() -> None:
    writes = HandedOffWrites(background_slots=1)
    log: list[str] = []
    gate = asyncio.Event()
    async with running(writes):
        await hold_the_one_slot(writes, "ns/x", gated(log, "x", gate), log)
        await writes.hand_off("ns/a", gated(log, "old reason"), background=True)
        await writes.hand_off("ns/a", gated(log, "new reason"), background=True)
        await writes.hand_off("ns/b", gated(log, "reason b"), background=True)
        assert writes.background_in_flight == 3  # x, a's newer reason, b
        await writes.settle("ns/b")  # b's reason is dropped, not awaited
        gate.set()
        await writes.settle("ns/x")
        await eventually(lambda: writes.background_in_flight == 0, what="the reasons left landing")
    assert sorted(log) == ["new reason landed", "new reason started", "x landed", "x started"]
