"""Rebuilding the engine from Workload status: admissions, their TAS placements and backoff.

The controllers keep the engine as a cache of the API server and rebuild it at the start of
each leadership term by submitting every Workload as the server holds it. What the previous
engine decided lives only in ``status``: ``admission`` (quota, flavors and, for TAS flavors,
Kueue's compressed ``topologyAssignment``) and ``requeueState`` (the backoff of an evicted
workload). This module turns those back into the engine's own records, so a restored gang holds
its nodes exactly as one the engine placed, and a restored backoff is the engine's own timer.
"""

from __future__ import annotations

from scheduler.api.kueue import Workload
from scheduler.engine.core import EngineCore, parse_timestamp
from scheduler.engine.workloads import Admission, PodSetAssignment, WorkloadInfo, WorkloadState


def restore_admission(engine: EngineCore, info: WorkloadInfo, workload: Workload, now: float) -> None:
    """Take ``status.admission`` as an admission the engine made: quota, placements, timers."""
    assert workload.status.admission is not None
    admission = workload.status.admission
    cq = engine.model.cluster_queues.get(admission.cluster_queue)
    pod_sets: list[PodSetAssignment] = []
    usage: dict[tuple[str, str], int] = {}
    by_name = {p.name: p for p in info.pod_sets}
    for assignment in admission.pod_set_assignments:
        pod_set = by_name.get(assignment.name)
        count = assignment.count if assignment.count is not None else (pod_set.count if pod_set else 0)
        ps_usage: dict[tuple[str, str], int] = {}
        if assignment.resource_usage:
            for resource, quantity in assignment.resource_usage.items():
                flavor = assignment.flavors.get(resource)
                if flavor is not None:
                    ps_usage[(flavor, resource)] = quantity.amount(resource)
        elif pod_set is not None:
            for resource, amount in pod_set.total(count).items():
                flavor = assignment.flavors.get(resource)
                if flavor is not None:
                    ps_usage[(flavor, resource)] = amount
        for fr, amount in ps_usage.items():
            usage[fr] = usage.get(fr, 0) + amount
        pod_sets.append(PodSetAssignment(assignment.name, count, dict(assignment.flavors), ps_usage))
    info.cluster_queue = admission.cluster_queue
    info.admission = Admission(admission.cluster_queue, pod_sets, usage)
    reserved = workload.status.condition("QuotaReserved")
    stamp = parse_timestamp(reserved.last_transition_time) if reserved else None
    info.admitted_at = now if stamp is None else stamp
    info.state = WorkloadState.ADMITTED
    info.pods_ready = workload.status.is_true("PodsReady")
    notes: list[str] = []
    if cq is not None:
        cq.admitted.add(info)
        for fr, amount in usage.items():
            cq.node.add_usage(fr, amount)
        info.admission.borrowed = {fr: cq.node.borrowed(fr) for fr in usage if cq.node.borrowed(fr)}
    else:
        # Kueue keeps such a workload admitted (its pods run) but no ClusterQueue counts it.
        notes.append(
            f"ClusterQueue {admission.cluster_queue!r} does not exist: this admission holds no quota; "
            "create the ClusterQueue to count it"
        )
    # its pods run on their nodes whether or not a ClusterQueue counts the quota
    notes.extend(engine.placements.restore(info, admission))
    info.reason = "; ".join(notes)


def restore_backoff(engine: EngineCore, info: WorkloadInfo, workload: Workload, now: float) -> bool:
    """``status.requeueState`` of a pending workload: keep its eviction count and, while
    ``requeueAt`` is still ahead of ``now``, hold it out of its queue until then (the engine's
    own backoff timer). True when it is held; the caller routes it otherwise."""
    state = workload.status.requeue_state
    if state is None:
        return False
    if state.count is not None and state.count > 0:
        info.requeue_count = state.count
    requeue_at = parse_timestamp(state.requeue_at)
    wait = engine.config.wait_for_pods_ready
    strategy = wait.requeuing if wait is not None else None
    evicted = workload.status.condition("Evicted")
    evicted_at = parse_timestamp(evicted.last_transition_time) if evicted and evicted.status == "True" else None
    if evicted_at is not None and (strategy is None or strategy.timestamp == "Eviction"):
        info.queue_order_time = evicted_at  # as ``_evict_with_backoff`` orders a requeued workload
    if requeue_at is None or requeue_at <= now:
        return False
    engine.hold_until(info, requeue_at, f"requeued by the backoff at {state.requeue_at} (status.requeueState)")
    return True
