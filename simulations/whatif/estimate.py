"""When a pending workload could start: the current queues simulated to the end, no new arrivals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulations.simulator import Simulation

if TYPE_CHECKING:
    from scheduler.queues import QueueState, StartEstimate
from simulations.whatif.rehearsal import rehearsal_from_state

# ------------------------------------------------------------------------------ start estimate


def estimate_start(state: QueueState, key: str, *, default_duration: float = 3600.0) -> StartEstimate:
    """When ``key`` could start if nothing new arrives: the current queues simulated to the end."""
    from scheduler.queues import StartEstimate

    rehearsal = rehearsal_from_state(state, default_duration=default_duration, window=0.0)
    workload = state.engine.workload(key)
    assumption = (
        f"every workload runs maximumExecutionTimeSeconds or {default_duration:g}s, no new arrivals, "
        "admitted workloads keep running"
    )
    if workload is None or workload.cluster_queue is None:
        return StartEstimate(None, assumption + "; the workload waits outside any ClusterQueue")
    simulation = Simulation(rehearsal.built, 1)
    for namespace, labels in rehearsal.namespaces.items():
        simulation.driver.engine.set_namespace(namespace, labels)
    simulation.run()
    record = simulation.metrics.jobs.get(f"{workload.cluster_queue}/{workload.namespace}.{workload.name}")
    if record is None or record.admitted is None:
        return StartEstimate(None, assumption)
    return StartEstimate(record.admitted, assumption)
