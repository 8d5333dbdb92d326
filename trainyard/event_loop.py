"""The event loop trainyard's long-running servers run on: uvloop.

The webhook, the controllers, the dashboard and the sandbox spend most of their CPU in the event
loop itself (TLS records, socket reads and writes, callbacks) rather than in trainyard's code:
for the webhook a review's own work is about a third of its CPU. uvloop runs that part in C;
`trainyard bench webhook` reads about 13% less server CPU per review on it. Short-lived commands
keep asyncio's own loop, where start-up matters more than throughput.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")


def run_server(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on a new uvloop event loop, as ``asyncio.run`` would."""
    return uvloop.run(main)
