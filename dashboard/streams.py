"""Server-Sent Events: the change feed live pages listen to, and log lines as they are written.

``/events`` sends ``change`` with the dashboard's data version whenever it moves (checked a few
times a second: the version is a counter, so a check is free) and every few seconds anyway: a
page compares it with the version it was built at and refreshes itself when they differ. A log stream sends each line as one ``data:`` message. Every stream ends
when its client goes or the server stops (``StreamRegistry.close_all``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from aiohttp import web

REPEAT_SECONDS = 2.0  # the current version is said again this often: a page built on stale data catches up


class StreamRegistry:
    """The open streams' tasks, so a stopping server can end them."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()

    @contextlib.contextmanager
    def track(self) -> Iterator[asyncio.Task[Any] | None]:
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)
        try:
            yield task
        finally:
            if task is not None:
                self.tasks.discard(task)

    async def close_all(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def open_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    await response.write(b"retry: 1000\n\n")
    return response


def message(data: str, event: str | None = None) -> bytes:
    clean = data.replace("\r", "").replace("\n", " ")
    return ((f"event: {event}\n" if event else "") + f"data: {clean}\n\n").encode()


async def change_feed(
    request: web.Request, registry: StreamRegistry, version: Callable[[], int], poll_seconds: float
) -> web.StreamResponse:
    response = await open_stream(request)
    with registry.track(), contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
        last = version()
        await response.write(message(str(last), "hello"))
        quiet = 0.0
        while True:
            await asyncio.sleep(poll_seconds)
            current = version()
            quiet += poll_seconds
            if current != last or quiet >= REPEAT_SECONDS:
                last = current
                quiet = 0.0
                await response.write(message(str(current), "change"))
    return response


async def line_feed(request: web.Request, registry: StreamRegistry, lines: AsyncIterator[str]) -> web.StreamResponse:
    """Each line of ``lines`` as a message; an error ends the stream with a ``failed`` message."""
    response = await open_stream(request)
    with registry.track(), contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
        try:
            async for line in lines:
                await response.write(message(line))
        except (OSError, ValueError) as error:
            await response.write(message(str(error), "failed"))
            return response
        await response.write(message("the log ended", "ended"))
    return response
