"""This machine's speed right now, as a number every benchmark figure carries.

The workload is the project's fixed calibration (``shared/tools/calibrate.py``), copied here as
a function so a benchmark run on any checkout measures it the same way: a time figure divided by
``calibration_seconds()`` (or a rate multiplied by it) means the same on a fast and a slow
machine. ``shared/tools/targets`` judges the time targets that way.
"""

from __future__ import annotations

import heapq
import random
import time

from trainyard.gc_tuning import python_default_collection


def _work() -> int:
    rnd = random.Random(1)
    heap: list[tuple[float, int]] = []
    counts: dict[int, int] = {}
    for i in range(600_000):
        k = rnd.randrange(50_000)
        counts[k] = counts.get(k, 0) + i
        heapq.heappush(heap, (rnd.random(), i))
        if len(heap) > 1000:
            heapq.heappop(heap)
    ordered = sorted(counts.items(), key=lambda kv: (kv[1] % 97, kv[0]))
    return len(ordered)


def calibration_seconds(runs: int = 3) -> float:
    """CPU seconds of the fixed workload, the best of ``runs`` (as calibrate.py prints it)."""
    best = float("inf")
    with python_default_collection():
        for _ in range(runs):
            started = time.process_time()
            _work()
            best = min(best, time.process_time() - started)
    return round(best, 3)
