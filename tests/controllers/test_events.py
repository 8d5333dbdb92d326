"""The Event recorder: queued while its sender runs, sent one at a time, dropped past its queue."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from scheduler.controllers import events
from scheduler.controllers.events import NORMAL, EventRecorder


class HeldClient:
    """Creates that wait until the test lets them through; records how many ran at once."""

    def __init__(self, *, held: bool = True) -> None:
        self.created: list[dict[str, Any]] = []
        self.running = 0
        self.most_at_once = 0
        self.go = asyncio.Event()
        if not held:
            self.go.set()

    async def create(self, document: dict[str, Any]) -> dict[str, Any]:
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await self.go.wait()
            self.created.append(document)
            return document
        finally:
            self.running -= 1


def _subject(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name}}


def _names(client: HeldClient) -> list[str]:
    return [e["involvedObject"]["name"] for e in client.created]


@asynccontextmanager
async def sending(recorder: EventRecorder) -> AsyncIterator[asyncio.Task[None]]:
    """The recorder's sender running, as its controller runs it beside the workers."""
    sender = asyncio.create_task(recorder.run())
    await asyncio.sleep(0)
    try:
        yield sender
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)


async def _until(condition: Any) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("condition not reached within 1 s")


async def test_events_are_sent_in_order_one_at_a_time_and_record_never_waits() -> None:
    client = HeldClient()
    recorder = EventRecorder(client)  # type: ignore[arg-type]
    async with sending(recorder):
        for index in range(5):
            await recorder.record(_subject(f"p{index}"), NORMAL, "Started", "started")  # returns, server held
        await asyncio.sleep(0.01)
        assert client.running == 1
        assert client.created == []
        client.go.set()
        await _until(lambda: recorder.sent == 5)
        assert _names(client) == [f"p{i}" for i in range(5)]
        assert client.most_at_once == 1
        assert recorder.failed == 0
        # the sender waits for the next Event rather than ending
        await recorder.record(_subject("late"), NORMAL, "Started", "started")
        await _until(lambda: recorder.sent == 6)
        assert _names(client)[-1] == "late"


async def test_events_past_the_queue_are_dropped_and_counted(monkeypatch: Any, caplog: Any) -> None:
    monkeypatch.setattr(events, "MAX_QUEUED", 3)
    client = HeldClient()
    recorder = EventRecorder(client)  # type: ignore[arg-type]
    caplog.set_level(logging.INFO, logger=events.__name__)
    async with sending(recorder):
        for index in range(7):
            await recorder.record(_subject(f"p{index}"), NORMAL, "Started", "started")
            await asyncio.sleep(0)  # the sender takes the first one off the queue and holds it
        assert recorder.failed == 3
        client.go.set()
        await _until(lambda: recorder.sent == 4)
        assert _names(client) == ["p0", "p1", "p2", "p3"]
    # one line when the queue fills, one when it drains: not one per dropped Event
    assert [r.getMessage() for r in caplog.records] == [
        "3 Events wait to be sent; dropping new ones until the queue drains",
        "the Event queue drained; 3 Events were dropped while it was full",
    ]


async def test_without_a_sender_an_event_is_sent_before_record_returns() -> None:
    client = HeldClient(held=False)
    recorder = EventRecorder(client)  # type: ignore[arg-type]
    await recorder.record(_subject("alone"), NORMAL, "Started", "started")
    assert _names(client) == ["alone"]
    assert recorder.sent == 1


async def test_stopping_the_sender_drops_what_is_queued_and_leaves_no_task() -> None:
    client = HeldClient()
    recorder = EventRecorder(client)  # type: ignore[arg-type]
    async with sending(recorder) as sender:
        for index in range(3):
            await recorder.record(_subject(f"p{index}"), NORMAL, "Started", "started")
        await asyncio.sleep(0.01)
    assert sender.cancelled()
    assert (recorder.sent, recorder.failed, recorder.queued) == (0, 2, 0)  # one was on the wire when cancelled
    client.go.set()
    await recorder.record(_subject("after"), NORMAL, "Started", "started")  # no sender: sent at once
    assert _names(client) == ["after"]
