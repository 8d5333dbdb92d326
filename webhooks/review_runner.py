"""Where an admission handler runs: inline for a small review, on a worker thread for a large one.

Handlers are pure and CPU-bound. Most reviews are a few kilobytes and take well under a
millisecond, less than a hop to another thread costs, so they run inline on the event loop. A
review's cost grows with its object, though (a TrainJob with many overrides, a runtime with many
jobs), and while a handler runs inline nothing else on the loop does: no health probe, no other
review, none of the controllers sharing the process. So a review whose body is at least
``inline_body_bytes`` runs on the one worker thread, and the loop stays free (the GIL is handed
back to it every few milliseconds); its answer is awaited until ``deadline`` seconds after the
request started, then the review is refused with a reason the user can act on. A refused review's
handler may still be running (a thread cannot be stopped): it finishes and its verdict is dropped.

Handlers never run at the same time as each other: while any review is on the worker (queued or
running), later reviews queue behind it there too, however small, instead of running inline. So
the handlers' shared state (the remembered verdicts, the engine built from the object cache) is
only ever touched by one of them at a time, as when all of them ran inline. The object cache
itself is fed on the loop meanwhile; its readers copy what they iterate (``ObjectCache.all``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from webhooks.handlers import Handler
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict

# Below every webhook's timeoutSeconds in manifests/webhook (5 s), leaving the API server's
# round trip and TLS room to spare; tests/deploy checks the manifests against it.
DEFAULT_REVIEW_DEADLINE = 3.0
# A TrainJob review from kubectl is a few KiB (twice that with last-applied-configuration).
DEFAULT_INLINE_BODY_BYTES = 64 * 1024


class ReviewRunner:
    """Runs handlers inline or on one worker thread (see the module's notes); ``close`` when done."""

    def __init__(
        self, *, deadline: float = DEFAULT_REVIEW_DEADLINE, inline_body_bytes: int = DEFAULT_INLINE_BODY_BYTES
    ) -> None:
        if deadline <= 0:
            raise ValueError(f"the review deadline must be positive, got {deadline:g}s")
        self.deadline = deadline
        self.inline_body_bytes = inline_body_bytes
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="admission-review")
        self._on_worker = 0  # reviews handed to the worker whose handler has not finished
        self._lock = threading.Lock()  # the count drops on the worker thread, or here on a cancel

    def runs_inline(self, body_bytes: int) -> bool:
        """Whether a review of ``body_bytes`` is judged inline now (else: ``judge_on_worker``)."""
        return body_bytes < self.inline_body_bytes and self._on_worker == 0

    async def judge_on_worker(
        self, handler: Handler, request: AdmissionRequest, cache: ObjectCache, *, started: float
    ) -> Verdict | None:
        """The handler's verdict from the worker; None when it was not ready ``deadline`` seconds
        after ``started`` (a ``time.perf_counter`` reading). A handler's exception is raised here."""
        with self._lock:
            self._on_worker += 1
        future = self._worker.submit(handler, request, cache)
        future.add_done_callback(self._finished)
        remaining = self.deadline - (time.perf_counter() - started)
        try:
            # on timeout the wrapper cancels the worker's future: a review still queued never runs
            return await asyncio.wait_for(asyncio.wrap_future(future), max(remaining, 0.0))
        except TimeoutError:
            return None

    def _finished(self, _: Future[Verdict]) -> None:
        with self._lock:
            self._on_worker -= 1

    def close(self) -> None:
        """Drop queued reviews; one that is running finishes on its own."""
        self._worker.shutdown(wait=False, cancel_futures=True)


def deadline_refusal(request: AdmissionRequest, deadline: float) -> Verdict:
    """The answer to a review that ran past the deadline: what happened and what to do about it."""
    what = (
        f"{request.kind} {request.namespace}/{request.name}" if request.namespace else f"{request.kind} {request.name}"
    )
    return Verdict.deny(
        f"trainyard webhook could not finish reviewing {what} within its {deadline:g}s deadline: the "
        "object is too large to judge in time (for a TrainJob: its podTemplateOverrides, "
        "runtimePatches and their env lists), or the webhook is busy with other large reviews; "
        "make the object smaller, or retry",
        code=504,
        reason="Timeout",
    )
