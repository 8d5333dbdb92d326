"""Python's cyclic garbage collector, tuned for processes that hold a large, long-lived heap.

trainyard's long-running commands keep tens of thousands of Kubernetes objects in memory (the
controllers' cache, the sandbox API server's store, a simulation's jobs): millions of small
dicts and lists that live for the whole run and hold no reference cycles. CPython 3.11 runs a
young collection every 700 net allocations and, often enough, a full one that walks the whole
heap; at 10,000 TrainJobs under the chaos benchmark, a sampling profile found 88% of the
process's time inside the collector. Reference counting frees almost everything trainyard
drops, so the collector is made to run far less often; it still runs, and still collects cycles.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# young collections every 50,000 net allocations (not 700); a middle and a full one after 20
# of the generation below (not 10): collections become rare, each still bounded
LARGE_HEAP_THRESHOLDS = (50_000, 20, 20)
_PYTHON_DEFAULTS = (700, 10, 10)


def tune_for_large_heaps() -> None:
    """Set the collector's thresholds for a process that holds a large heap (idempotent)."""
    gc.set_threshold(*LARGE_HEAP_THRESHOLDS)


@contextlib.contextmanager
def python_default_collection() -> Iterator[None]:
    """Python's own thresholds inside the block: for the calibration workload, which must be
    timed exactly as ``shared/tools/calibrate.py`` times it in a fresh interpreter."""
    saved = gc.get_threshold()
    gc.set_threshold(*_PYTHON_DEFAULTS)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
