"""Kueue's queue gauges, worked out from the engine at each scrape (not set after each cycle)."""

from __future__ import annotations

from builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue
from prometheus_client import generate_latest

from scheduler.controllers.queueing.metrics import QueueMetrics
from scheduler.engine import AdmissionEngine, EngineConfig


def _workload(name: str, cpus: int) -> WorkloadBuilder:
    return WorkloadBuilder(name, "team-a").queue("main").created(0).pod_set(count=cpus, cpu="1")


def _scrape(metrics: QueueMetrics) -> str:
    return generate_latest(metrics.registry).decode()


def test_the_gauges_describe_the_engine_as_it_is_when_scraped() -> None:
    engine = AdmissionEngine(EngineConfig())
    engine.apply(flavor("default"))
    engine.apply(ClusterQueueBuilder("team-a").quota("default", "cpu", 4).obj())
    engine.apply(local_queue("main", "team-a", "team-a"))
    metrics = QueueMetrics()
    assert "kueue_pending_workloads{" not in _scrape(metrics)  # no engine followed yet: no samples
    metrics.follow(lambda: engine)

    engine.submit(_workload("fits", 3).obj(), now=0)
    engine.submit(_workload("waits", 3).obj(), now=0)
    text = _scrape(metrics)
    assert 'kueue_pending_workloads{cluster_queue="team-a",status="active"} 2.0' in text
    assert 'kueue_admitted_active_workloads{cluster_queue="team-a"} 0.0' in text

    engine.schedule(1.0)  # no refresh call: the next scrape reads the engine again
    text = _scrape(metrics)
    assert 'kueue_admitted_active_workloads{cluster_queue="team-a"} 1.0' in text
    assert 'kueue_cluster_queue_resource_usage{cluster_queue="team-a",flavor="default",resource="cpu"} 3.0' in text
    waiting = [line for line in text.splitlines() if line.startswith('kueue_pending_workloads{cluster_queue="team-a"')]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in waiting) == 1.0
