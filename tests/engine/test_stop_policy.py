"""stopPolicy over time: Hold stops admissions only; HoldAndDrain also evicts; starting again re-admits."""

from __future__ import annotations

import pytest
from builders import ClusterQueueBuilder, LocalQueueBuilder, WorkloadBuilder, flavor, local_queue

from scheduler.api.kueue import LocalQueue
from scheduler.engine import AdmissionEngine, WorkloadState
from scheduler.engine.views import workload_report

CPU = ("default", "cpu")


def _stopped_local_queue(policy: str) -> LocalQueue:
    return LocalQueueBuilder("main", "team-a").cluster_queue("team-a").stop_policy(policy).obj()


def _engine_with_running(policy_on: str, policy: str) -> tuple[AdmissionEngine, str, str]:
    """team-a (4 cpu) runs ``running`` (2 cpu); ``waiting`` (2 cpu) is queued; then the stop policy is set."""
    engine = AdmissionEngine()
    engine.apply(flavor("default"))
    engine.apply(ClusterQueueBuilder("team-a").quota("default", "cpu", 4).obj())
    engine.apply(local_queue("main", "team-a", "team-a"))
    running = engine.submit(WorkloadBuilder("running", "team-a").queue("main").pod_set(count=2, cpu="1").obj(), 0)
    assert [a.key for a in engine.schedule(0).admitted] == [running]
    if policy_on == "ClusterQueue":
        engine.apply(ClusterQueueBuilder("team-a").quota("default", "cpu", 4).stop_policy(policy).obj())
    else:
        engine.apply(_stopped_local_queue(policy))
    waiting = engine.submit(WorkloadBuilder("waiting", "team-a").queue("main").pod_set(count=2, cpu="1").obj(), 1)
    return engine, running, waiting


@pytest.mark.parametrize("policy_on", ["ClusterQueue", "LocalQueue"])
def test_hold_stops_admission_but_keeps_running_workloads(policy_on: str) -> None:
    engine, running, waiting = _engine_with_running(policy_on, "Hold")
    result = engine.schedule(2)
    assert not result.admitted
    assert not result.evicted
    assert engine.workloads[running].state is WorkloadState.ADMITTED
    assert engine.model.cluster_queues["team-a"].node.usage.get(CPU) == 2000
    assert engine.workloads[waiting].state is WorkloadState.PENDING


@pytest.mark.parametrize(
    ("policy_on", "reason", "message"),
    [
        ("ClusterQueue", "ClusterQueueStopped", "The ClusterQueue is stopped"),
        ("LocalQueue", "LocalQueueStopped", "The LocalQueue is stopped"),
    ],
)
def test_hold_and_drain_evicts_releases_quota_and_restart_readmits(policy_on: str, reason: str, message: str) -> None:
    engine, running, waiting = _engine_with_running(policy_on, "HoldAndDrain")
    result = engine.schedule(2)
    assert [(e.key, e.reason, e.message, e.requeue_at) for e in result.evicted] == [(running, reason, message, 2)]
    assert not result.admitted, "a stopped queue admits nothing, not even what it just drained"
    assert engine.model.cluster_queues["team-a"].node.usage.get(CPU, 0) == 0
    report = workload_report(engine, engine.workloads[running])
    assert report["status"] == "Pending"
    assert report["evictions"][-1]["reason"] == reason
    assert not engine.schedule(3).evicted, "evicted once, not again every cycle"
    # start the queue again: both are admitted, the drained one first (it was created first)
    if policy_on == "ClusterQueue":
        engine.apply(ClusterQueueBuilder("team-a").quota("default", "cpu", 4).obj())
    else:
        engine.apply(local_queue("main", "team-a", "team-a"))
    assert [a.key for a in engine.schedule(4).admitted] == [running, waiting]
    assert engine.model.cluster_queues["team-a"].node.usage.get(CPU) == 4000


def test_hold_and_drain_on_one_local_queue_leaves_the_others_running() -> None:
    engine = AdmissionEngine()
    engine.apply(flavor("default"))
    engine.apply(ClusterQueueBuilder("team-a").quota("default", "cpu", 4).obj())
    engine.apply(local_queue("main", "team-a", "team-a"))
    engine.apply(local_queue("other", "team-a", "team-a"))
    drained = engine.submit(WorkloadBuilder("drained", "team-a").queue("main").pod_set(count=2, cpu="1").obj(), 0)
    kept = engine.submit(WorkloadBuilder("kept", "team-a").queue("other").pod_set(count=2, cpu="1").obj(), 0)
    engine.schedule(0)
    engine.apply(_stopped_local_queue("HoldAndDrain"))
    result = engine.schedule(1)
    assert [e.key for e in result.evicted] == [drained]
    assert engine.workloads[kept].state is WorkloadState.ADMITTED
    assert engine.model.cluster_queues["team-a"].node.usage.get(CPU) == 2000
