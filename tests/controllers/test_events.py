"""The Event recorder: queued, sent one at a time in the background, dropped past its queue."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.controllers import events
from scheduler.controllers.events import NORMAL, EventRecorder


class HeldClient:
    """Creates that wait until the test lets them through; records how many ran at once."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.running = 0
        self.most_at_once = 0
        self.go = asyncio.Event()

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


async def test_events_are_sent_in_order_one_at_a_time_and_record_never_waits() -> None:
    client = HeldClient()
    recorder = EventRecorder(client)  # type: ignore[arg-type]
    for index in range(5):
        await recorder.record(_subject(f"p{index}"), NORMAL, "Started", "started")  # returns with the server held
    await asyncio.sleep(0.01)
    assert client.running == 1
    assert client.created == []
    client.go.set()
    await recorder.flush()
    assert [e["involvedObject"]["name"] for e in client.created] == [f"p{i}" for i in range(5)]
    assert client.most_at_once == 1
    assert (recorder.sent, recorder.failed) == (5, 0)
    # a later Event starts the sender again
    await recorder.record(_subject("late"), NORMAL, "Started", "started")
    await recorder.flush()
    assert client.created[-1]["involvedObject"]["name"] == "late"


async def test_events_past_the_queue_are_dropped_and_counted(monkeypatch: Any) -> None:
    monkeypatch.setattr(events, "MAX_QUEUED", 3)
    client = HeldClient()
    recorder = EventRecorder(client)  # type: ignore[arg-type]
    for index in range(6):
        await recorder.record(_subject(f"p{index}"), NORMAL, "Started", "started")
    assert recorder.failed == 3
    client.go.set()
    await recorder.flush()
    assert [e["involvedObject"]["name"] for e in client.created] == ["p0", "p1", "p2"]
