"""When the sandbox's service has nothing left to do at an instant: ``Quiescence``.

The lockstep driver moves virtual time on only once the service is quiescent: every work queue
of the controllers and stand-ins empty, none reconciling, no timer due soon, and the store's
revision still over two polls. A work-queue timer first seen due later than ``TIMER_HORIZON``
is a fallback recheck (the launcher looks again after 1 s in case its own write's echo never
comes; the stand-in kubelet parks running pods), not work the instant waits for: debounces,
batches and conflict retries are all shorter.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

from sandbox.apiserver import FakeApiServer
from scheduler.controllers.workqueue import WorkQueue

SETTLE_POLL = 0.005  # seconds between quiescence checks
# ...and event-loop iterations between them. A watch event crosses several iterations (the
# server's stream task, the loopback socket, the client's TLS and reader, the informer, the work
# queue); a starved process can see two polls' wall time pass in fewer, and so call the service
# quiet while an event is still on its way (the 1,000-node bench then placed a job beside a
# finished one it had not yet seen end).
SETTLE_YIELDS = 25
TIMER_HORIZON = 0.5


class Quiescence:
    """``await Quiescence(server, queues, timeout).settle(now)``: returns once nothing is left to do.

    ``queues`` returns every work queue of the service and the stand-ins.
    """

    def __init__(
        self, server: FakeApiServer, queues: Callable[[], Iterable[WorkQueue[Any]]], settle_timeout: float = 60.0
    ) -> None:
        self.server = server
        self.queues = queues
        self.settle_timeout = settle_timeout
        self._parked: dict[int, asyncio.TimerHandle] = {}

    def busy(self) -> bool:
        """Any work queue with keys waiting, keys being reconciled, or a short timer pending.

        A timer first seen due further off than ``TIMER_HORIZON`` is a fallback recheck and is
        left out for good (its handle is kept, so its id is not reused while it lives).
        """
        loop_now = asyncio.get_running_loop().time()
        horizon = loop_now + TIMER_HORIZON
        busy = False
        for queue in self.queues():
            # the work queue's own bookkeeping: keys waiting, keys being reconciled, timers due
            if len(queue) or queue._processing:
                busy = True
            for timer in queue._timers.values():
                if id(timer) in self._parked:
                    continue
                if timer.when() > horizon:
                    self._parked[id(timer)] = timer
                else:
                    busy = True
        if len(self._parked) > 10_000:
            self._parked = {k: t for k, t in self._parked.items() if not t.cancelled() and t.when() > loop_now}
        return busy

    async def settle(self, now: float) -> None:
        """Return once the service has nothing left to do at virtual time ``now``."""
        deadline = time.perf_counter() + self.settle_timeout
        quiet = 0
        revision = -1
        while quiet < 2:
            await asyncio.sleep(SETTLE_POLL)
            for _ in range(SETTLE_YIELDS):
                await asyncio.sleep(0)
            current = self.server.store.resource_version
            if self.busy() or current != revision:
                quiet = 0
                revision = current
            else:
                quiet += 1
            if time.perf_counter() > deadline:
                raise TimeoutError(
                    f"the sandbox did not settle within {self.settle_timeout:g}s at virtual time {now:.1f}s: "
                    f"{self.describe_busy()}"
                )

    def describe_busy(self) -> str:
        """What keeps the service busy: per work queue its waiting and reconciling keys and short timers."""
        horizon = asyncio.get_running_loop().time() + TIMER_HORIZON
        parts = []
        for queue in self.queues():
            waiting = sorted(queue._dirty)
            processing = sorted(queue._processing)
            timers = sorted(
                key for key, timer in queue._timers.items() if id(timer) not in self._parked and timer.when() <= horizon
            )
            if waiting or processing or timers:
                parts.append(
                    f"{queue.name}: waiting {_some(waiting)}, reconciling {_some(processing)}, "
                    f"timers due {_some(timers)}"
                )
        return "; ".join(parts) or "no work queue busy; the store's revision kept moving (a writer outside the queues)"


def _some(keys: list[str], shown: int = 3) -> str:
    if not keys:
        return "none"
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    return f"{len(keys)} ({', '.join(keys[:shown])}{more})"
