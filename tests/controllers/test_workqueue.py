"""The work queue keeps client-go's promises: dedup, no concurrent key, per-key backoff, delays."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.controllers.workqueue import WorkQueue


async def test_a_waiting_key_is_queued_once() -> None:
    queue = WorkQueue()
    for key in ["a", "b", "a", "a", "b", "c"]:
        queue.add(key)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]


async def test_a_key_added_while_processing_comes_back_after_done_not_before() -> None:
    queue = WorkQueue()
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # not handed to a second worker while the first holds it
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    assert not second.done()
    queue.done("a")
    assert await asyncio.wait_for(second, 1) == "a"
    queue.done("a")
    assert len(queue) == 0  # the two adds during processing were one


async def test_done_without_a_new_add_does_not_requeue() -> None:
    queue = WorkQueue()
    queue.add("a")
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_backoff_doubles_per_key_up_to_the_cap_and_forget_resets_it() -> None:
    queue = WorkQueue(base_delay=0.005, max_delay=0.04)
    delays = []
    for _ in range(6):
        delays.append(queue.backoff_delay("a"))
        queue.add_rate_limited("a")
    assert delays == [0.005, 0.01, 0.02, 0.04, 0.04, 0.04]
    assert queue.num_requeues("a") == 6
    assert queue.backoff_delay("b") == 0.005  # per key
    queue.forget("a")
    assert queue.backoff_delay("a") == 0.005
    assert await asyncio.wait_for(queue.get(), 1) == "a"  # the timers fire one add (dedup)
    queue.done("a")
    await asyncio.sleep(0.06)
    assert len(queue) == 0


async def test_rate_limited_key_waits_its_backoff() -> None:
    queue = WorkQueue(base_delay=0.05, max_delay=1.0)
    queue.add_rate_limited("a")
    assert len(queue) == 0
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    assert loop.time() - start >= 0.045


async def test_add_after_keeps_the_earliest_deadline() -> None:
    queue = WorkQueue()
    loop = asyncio.get_running_loop()
    start = loop.time()
    queue.add_after("a", 0.5)
    queue.add_after("a", 0.02)  # earlier: replaces the later timer
    queue.add_after("a", 0.3)  # later: ignored
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    assert loop.time() - start < 0.25
    queue.done("a")
    await asyncio.sleep(0.6)
    assert len(queue) == 0  # the replaced and ignored deadlines did not fire


async def test_shutdown_wakes_waiting_workers_with_none_and_drops_timers() -> None:
    queue = WorkQueue()
    waiting = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)
    queue.add_after("later", 0.01)
    queue.shutdown()
    assert await asyncio.gather(*waiting) == [None, None, None]
    queue.add("x")
    assert await queue.get() is None
    await asyncio.sleep(0.02)
    assert len(queue) == 0


async def test_a_cancelled_woken_waiter_passes_the_key_on() -> None:
    queue = WorkQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")  # wakes `first`
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, 1) == "a"


def test_bad_delays_are_refused() -> None:
    with pytest.raises(ValueError, match="base_delay"):
        WorkQueue(base_delay=0)
