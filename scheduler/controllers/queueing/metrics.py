"""Prometheus metrics of the queue controller, named and labelled as Kueue's (pkg/metrics).

Registered in the registry the caller passes (the webhook's, so one /metrics serves both);
gauges are recomputed from the engine after each admission cycle, so they always describe the
engine's current view rather than drifting with missed increments.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from scheduler.engine import AdmissionEngine, WorkloadState

# Kueue's admission wait buckets (generateExponentialBuckets(14): 1s doubling to ~2.3h)
WAIT_BUCKETS = tuple(float(2**i) for i in range(14))


class QueueMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.pending = Gauge(
            "kueue_pending_workloads",
            "The number of pending workloads, per cluster_queue and status (active: waiting in the "
            "queue, inadmissible: cannot be admitted as things stand).",
            ("cluster_queue", "status"),
            registry=self.registry,
        )
        self.admitted_active = Gauge(
            "kueue_admitted_active_workloads",
            "The number of admitted workloads that are active (unsuspended and not finished), per cluster_queue.",
            ("cluster_queue",),
            registry=self.registry,
        )
        self.wait_time = Histogram(
            "kueue_admission_wait_time_seconds",
            "The time between a workload's creation (or requeue) and its admission, per cluster_queue.",
            ("cluster_queue",),
            buckets=WAIT_BUCKETS,
            registry=self.registry,
        )
        self.resource_usage = Gauge(
            "kueue_cluster_queue_resource_usage",
            "The resource usage of admitted workloads, per cluster_queue, flavor and resource.",
            ("cluster_queue", "flavor", "resource"),
            registry=self.registry,
        )
        self.quota_reserved = Counter(
            "kueue_quota_reserved_workloads",
            "The number of workloads whose quota was reserved, per cluster_queue.",
            ("cluster_queue",),
            registry=self.registry,
        )

    def admitted(self, cluster_queue: str, waited_seconds: float) -> None:
        self.quota_reserved.labels(cluster_queue).inc()
        self.wait_time.labels(cluster_queue).observe(max(0.0, waited_seconds))

    def refresh(self, engine: AdmissionEngine) -> None:
        """Set the gauges from the engine's state."""
        pending: dict[tuple[str, str], int] = {}
        admitted: dict[str, int] = {}
        for name in engine.cluster_queue_objects():
            pending[(name, "active")] = 0
            pending[(name, "inadmissible")] = 0
            admitted[name] = 0
        for workload in engine.all_workloads():
            cq = workload.cluster_queue
            if not cq:
                continue
            if workload.state is WorkloadState.PENDING:
                pending[(cq, "active")] = pending.get((cq, "active"), 0) + 1
            elif workload.state is WorkloadState.INADMISSIBLE:
                pending[(cq, "inadmissible")] = pending.get((cq, "inadmissible"), 0) + 1
            elif workload.state is WorkloadState.ADMITTED:
                admitted[cq] = admitted.get(cq, 0) + 1
        for (cq, status), count in pending.items():
            self.pending.labels(cq, status).set(count)
        for cq, count in admitted.items():
            self.admitted_active.labels(cq).set(count)
        self.resource_usage.clear()
        for name, info in engine.cluster_queues().items():
            for (flavor, resource), amount in info.node.usage.items():
                self.resource_usage.labels(name, flavor, resource).set(_in_units(resource, amount))


def _in_units(resource: str, amount: int) -> float:
    """Engine amounts are milli-units for cpu; Kueue reports cores."""
    return amount / 1000 if resource == "cpu" else float(amount)
