"""Shared test setup.

Like kopf's conftest, a test fails when it leaks an asyncio task: every task a test starts
must be finished or cancelled by the time the test's event loop closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

settings.register_profile("default", deadline=None, print_blob=True)
settings.load_profile("default")


@pytest.fixture(autouse=True)
async def _no_leaked_tasks() -> AsyncIterator[None]:
    before = set(asyncio.all_tasks())
    yield
    # give tasks a turn to finish their own cancellation
    await asyncio.sleep(0)
    leaked = [t for t in asyncio.all_tasks() - before if not t.done() and t is not asyncio.current_task()]
    for task in leaked:
        task.cancel()
    assert not leaked, f"test leaked asyncio tasks: {leaked}"
