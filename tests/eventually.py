"""Waiting in tests for something another task, process or cluster brings about: poll a check until it
returns something truthy, and return that.

One helper for every test package. A check may be a plain function or return an awaitable (an
``async def`` or a lambda calling one). On timeout the failure names what was awaited (``what``, or
the check's own source line when no ``what`` is given) and the last value the check returned, so
a failing wait reads as the state it stopped in, not just "timed out".
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

# Generous, because a wait ends as soon as its check holds: the timeout only bounds a failing test.
ASYNC_TIMEOUT = 30.0
ASYNC_INTERVAL = 0.02
BLOCKING_TIMEOUT = 60.0
BLOCKING_INTERVAL = 0.25


async def eventually(
    check: Callable[[], T | Awaitable[T]],
    what: str | None = None,
    *,
    timeout: float = ASYNC_TIMEOUT,
    interval: float = ASYNC_INTERVAL,
) -> T:
    """Poll ``check`` every ``interval`` seconds on the running loop until it returns something truthy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        last = check()
        if inspect.isawaitable(last):
            last = await last
        if last:
            return last  # type: ignore[return-value]
        if loop.time() >= deadline:
            raise AssertionError(timed_out(check, what, timeout, last))
        await asyncio.sleep(interval)


def eventually_blocking(
    check: Callable[[], T],
    what: str | None = None,
    *,
    timeout: float = BLOCKING_TIMEOUT,
    interval: float = BLOCKING_INTERVAL,
) -> T:
    """``eventually`` for a test with no event loop (a real cluster read through a blocking client)."""
    deadline = time.monotonic() + timeout
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(timed_out(check, what, timeout, last))
        time.sleep(interval)


def timed_out(check: Callable[..., Any], what: str | None, timeout: float, last: Any) -> str:
    """The failure's message: what was awaited, for how long, and the last value seen."""
    return f"not within {timeout:g} s: {what or describe(check)} (last seen: {last!r})"


def describe(check: Callable[..., Any]) -> str:
    """A check without a ``what``: its source line for a lambda, its name for a function."""
    name = getattr(check, "__qualname__", repr(check))
    if name.endswith("<lambda>"):
        try:
            return inspect.getsource(check).strip()
        except (OSError, TypeError):
            return name
    return name
