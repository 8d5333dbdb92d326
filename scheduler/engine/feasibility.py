"""Can a workload ever be admitted? The webhook's and validation's "never fits" check.

Quota: its total request must be reachable through borrowing up the cohort (Kueue's
``potentialAvailable``) in some flavor that suits its pods. Topology: a domain at the required
level must hold the gang when nothing else runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.kueue import Workload
from scheduler.engine.flavors import Mode, assign_flavors
from scheduler.engine.workloads import workload_info

if TYPE_CHECKING:
    from scheduler.engine.core import EngineCore


def never_fits_reason(engine: EngineCore, workload: Workload) -> str | None:
    """Why ``workload`` could never be admitted, even on an empty cluster; None if it could."""
    model = engine.model
    info = workload_info(workload, priority=engine.priority_of(workload), created=0.0, sequence=-1)
    lq = model.local_queues.get(f"{info.namespace}/{info.local_queue}")
    if lq is None:
        return f"LocalQueue {info.local_queue!r} does not exist in namespace {info.namespace}"
    cq = model.cluster_queues.get(lq.spec.cluster_queue)
    if cq is None:
        return f"ClusterQueue {lq.spec.cluster_queue!r} (of LocalQueue {info.local_queue}) does not exist"
    assignment = assign_flavors(cq, info, model.flavors, None, empty=True)
    if assignment.mode is not Mode.FIT:
        return assignment.message()
    placements, why = engine.placements.place(cq, info, assignment, simulate_empty=True)
    return None if placements is not None else why
