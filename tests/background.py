"""A coroutine run as a task for the length of a ``with`` block, then cancelled and awaited: a
controller, an elector, a manager or a writer's task group, as a test keeps one running."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


@contextlib.asynccontextmanager
async def in_background(coroutine: Coroutine[Any, Any, T]) -> AsyncIterator[asyncio.Task[T]]:
    task = asyncio.create_task(coroutine)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
