"""What `bench chaos` reports about a run that lost jobs: the live replica's state, and each lost
job's story as the API server's store and the replica's cache and engine hold it."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

NAMESPACE = "chaos"


def replica_state(replica: Any) -> dict[str, Any]:
    """The last replica's view when jobs were lost: is it leading, does it run cycles, what does its engine hold."""
    service = replica.service
    engine = service.queue.queue.engine
    states = Counter(info.state.name for info in engine.all_workloads())
    usage = {
        name: {str(k): v for k, v in cq.node.usage.items()} for name, cq in sorted(engine.cluster_queues().items())
    }
    from scheduler.engine import waiting_reason

    task = replica.task
    pending = [info for info in engine.all_workloads() if info.state.name == "PENDING"][:5]
    timer = engine.next_timer()
    return {
        "task": "running" if not task.done() else repr(task.exception()) if not task.cancelled() else "cancelled",
        "leading": service.manager.leading.is_set(),
        "terms": service.manager.terms,
        "cycles": service.queue.queue.cycles,
        "informers": {
            i.kind.kind: {
                "lists": i.stats.lists,
                "watches": i.stats.watches,
                "errors": i.stats.errors,
                "rv": i.resource_version,
            }
            for i in service.manager.informers
        },
        "engine_states": dict(states),
        "engine_usage": usage,
        "engine_next_timer_in_s": None if timer is None else round(timer - time.time(), 2),
        "pending_reasons": {info.key: waiting_reason(engine, info) for info in pending},
        "work_queues": {
            c.name: {
                "queued": len(c.queue._queue),
                "processing": sorted(c.queue._processing)[:5],
                "timers": sorted(c.queue._timers)[:5],
            }
            for c in service.manager.controllers
        },
    }


def lost_job_story(cluster: Any, replica: Any, trainjob_name: str, workload: str | None) -> str:
    """What the server and the live replica's engine hold for a lost job (to find why it is stuck)."""
    store = cluster.server.store
    parts = []
    try:
        document = store.get(
            cluster.server.type_of("trainer.kubeflow.org/v1alpha1", "TrainJob"), NAMESPACE, trainjob_name
        )
        conditions = (document.get("status") or {}).get("conditions") or []
        parts.append(f"trainjob rv={document['metadata'].get('resourceVersion')}")
        parts.append(f"suspend={(document.get('spec') or {}).get('suspend')}")
        parts.append("trainjob=" + ",".join(f"{c.get('type')}={c.get('status')}" for c in conditions))
    except Exception as error:
        parts.append(f"trainjob: {error}")
    try:
        jobset = store.get(cluster.server.type_of("jobset.x-k8s.io/v1alpha2", "JobSet"), NAMESPACE, trainjob_name)
        conditions = (jobset.get("status") or {}).get("conditions") or []
        parts.append(
            f"jobset rv={jobset['metadata'].get('resourceVersion')} "
            + ",".join(f"{c.get('type')}={c.get('status')}" for c in conditions)
        )
    except Exception:
        parts.append("no jobset")
    cache = replica.service.manager.cache
    for kind in ("TrainJob", "JobSet"):
        cached = cache.get(kind, trainjob_name, NAMESPACE)
        version = None if cached is None else cached["metadata"].get("resourceVersion")
        parts.append(f"cached {kind} rv={version}")
    if workload is not None:
        engine = replica.service.queue.queue.engine
        info = engine.workload(f"{NAMESPACE}/{workload}")
        parts.append(f"engine={None if info is None else info.state.name}")
    return " | " + "; ".join(parts)
