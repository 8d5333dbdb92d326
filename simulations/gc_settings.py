"""The cyclic garbage collector's settings for the length of one simulation run.

A run allocates millions of short-lived objects (events, decisions, pod views) and almost no
reference cycles: a 60,000-job benchmark run collects about 400 cyclic objects in all. With
the default thresholds the collector still runs about 2,000 times in such a run and walks the
whole growing heap (the engine's workloads, every job's record) on each full collection:
about 2 s of a 33 s run, part of it charged to the engine's calls. During a run the objects
built before it (10,000 Nodes, the engine's tables) are frozen out of the collector's walks
and young collections run less often; both settings are restored when the run ends, so a
caller (tests, the CLI, a long-lived process) keeps its own.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Allocations between young collections during a run (CPython's default is 700), and how many
# young collections make a middle-generation one (default 10). Cyclic garbage is rare, so the
# bounded memory held between collections is what a larger threshold trades.
RUN_THRESHOLDS = (20_000, 50, 100)


@contextmanager
def batch_collector() -> Iterator[None]:
    """Freeze what exists now and collect young objects less often, until the block ends."""
    previous = gc.get_threshold()
    caller_froze = gc.get_freeze_count() > 0
    gc.freeze()
    gc.set_threshold(*RUN_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        if not caller_froze:  # a caller's own freeze stays as it was (gc has one permanent set)
            gc.unfreeze()
