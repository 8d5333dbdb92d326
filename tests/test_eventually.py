"""The one waiting helper: it returns the check's first truthy value, awaits async checks, and a
wait that fails names what was awaited and the last value it saw."""

from __future__ import annotations

import itertools

import pytest

from tests.eventually import eventually, eventually_blocking


async def test_the_first_truthy_value_is_returned() -> None:
    counter = itertools.count()
    assert await eventually(lambda: next(counter) >= 3 and "ready", interval=0) == "ready"


async def test_an_async_check_is_awaited() -> None:
    calls: list[int] = []

    async def check() -> list[int] | None:
        calls.append(1)
        return calls if len(calls) == 2 else None

    assert await eventually(check, "two calls", interval=0) == [1, 1]


async def test_a_failed_wait_names_what_and_the_last_value() -> None:
    pending = ["a", "b"]
    with pytest.raises(AssertionError, match=r"not within 0.05 s: the queue drained \(last seen: False\)"):
        await eventually(lambda: not pending, "the queue drained", timeout=0.05)
    with pytest.raises(AssertionError) as failed:
        await eventually(lambda: {"pending": 2}.get("admitted"), timeout=0.05)
    # with no ``what`` the message quotes the check's own line
    assert 'lambda: {"pending": 2}.get("admitted")' in str(failed.value)
    assert "(last seen: None)" in str(failed.value)


def test_the_blocking_wait_is_the_same_wait() -> None:
    counter = itertools.count()
    assert eventually_blocking(lambda: next(counter) == 2, interval=0) is True
    with pytest.raises(AssertionError, match=r"not within 0.01 s: nothing \(last seen: 0\)"):
        eventually_blocking(lambda: 0, "nothing", timeout=0.01, interval=0)
