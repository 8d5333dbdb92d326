"""``python -m trainyard ...`` as a child process of a test: stopped with SIGTERM at the end, and it
must exit 0 (a controller that fails to shut down cleanly fails the test)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextlib.asynccontextmanager
async def trainyard(*args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trainyard", *args, stderr=asyncio.subprocess.PIPE, cwd=ROOT
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
        assert process.returncode == 0, stderr.decode()
