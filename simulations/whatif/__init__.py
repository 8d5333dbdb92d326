"""What-if rehearsals: the current queues (or a scenario) simulated with and without a change.

``rehearsal_from_queues`` turns loaded Kueue objects and Workloads into a simulator scenario:
every ClusterQueue becomes a simulated team (its own namespace and LocalQueue, with the labels
of the namespace its workloads came from), the workloads that hold quota are submitted first,
then the pending ones in creation order, and the arrivals of the last ``window`` seconds are
replayed as the next window's arrivals. Durations are not in a Workload: each runs
``maximumExecutionTimeSeconds`` when set, else ``default_duration`` (less what an admitted one
already ran). Changes (``parse_change``) edit the objects, nodes or arrivals; ``run_variants``
runs the variants on one seed, in parallel processes, and ``compare`` lists per queue the
differences in wait p50/p95, completion time, utilization, borrowing and preemptions.

The package: ``rehearsal`` (queues -> scenario), ``changes``, ``runs`` (variants and their
comparison) and ``estimate`` (a start-time estimate).
"""

from __future__ import annotations

from simulations.whatif.changes import Change, apply_changes, parse_change
from simulations.whatif.estimate import estimate_start
from simulations.whatif.rehearsal import DEFAULT_WINDOW, Rehearsal, rehearsal_from_queues, rehearsal_from_state
from simulations.whatif.runs import FIGURES, VariantResult, compare, per_queue_figures, run_one, run_variants

__all__ = [
    "DEFAULT_WINDOW",
    "FIGURES",
    "Change",
    "Rehearsal",
    "VariantResult",
    "apply_changes",
    "compare",
    "estimate_start",
    "parse_change",
    "per_queue_figures",
    "rehearsal_from_queues",
    "rehearsal_from_state",
    "run_one",
    "run_variants",
]
