"""Engine behaviour a YAML scenario cannot show: the clock, timers, finishing, feasibility checks."""

from __future__ import annotations

import pytest
from builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue

from scheduler.engine import AdmissionEngine, EngineConfig, RequeuingStrategy, WaitForPodsReady
from scheduler.engine.views import workload_report


def _engine(config: EngineConfig | None = None, *, nominal: int = 4) -> AdmissionEngine:
    engine = AdmissionEngine(config or EngineConfig())
    engine.apply(flavor("default"))
    engine.apply(ClusterQueueBuilder("team-a").quota("default", "cpu", nominal).obj())
    engine.apply(local_queue("main", "team-a", "team-a"))
    return engine


def _workload(name: str, cpus: int, created: int = 0) -> WorkloadBuilder:
    return WorkloadBuilder(name, "team-a").queue("main").created(created).pod_set(count=cpus, cpu="1")


@pytest.mark.parametrize(
    ("requeue_count", "expected"),
    [(1, 10.0), (2, 20.0), (3, 40.0), (4, 80.0), (5, 100.0), (9, 100.0)],
    ids=["first-is-base", "doubles", "doubles-again", "eighty", "capped-at-max", "stays-capped"],
)
def test_requeue_backoff_is_base_times_two_to_the_n_minus_one_capped(requeue_count: int, expected: float) -> None:
    strategy = RequeuingStrategy(backoff_base_seconds=10, backoff_max_seconds=100)
    assert strategy.backoff(requeue_count) == expected


def test_pods_ready_timeout_evicts_requeues_with_backoff_then_deactivates() -> None:
    wait = WaitForPodsReady(
        timeout_seconds=60,
        requeuing=RequeuingStrategy(backoff_limit_count=3, backoff_base_seconds=10, backoff_max_seconds=25),
    )
    engine = _engine(EngineConfig(wait_for_pods_ready=wait))
    key = engine.submit(_workload("never-ready", 4).obj(), now=0)
    admitted_at = 0.0
    assert [a.key for a in engine.schedule(admitted_at).admitted] == [key]
    # backoff after the n-th eviction: min(10 * 2^(n-1), 25)
    for eviction, backoff in enumerate([10.0, 20.0, 25.0], start=1):
        deadline = admitted_at + 60
        assert engine.next_timer() == deadline, f"eviction {eviction}: the PodsReady timer is armed at admission + 60s"
        assert not engine.schedule(deadline - 1).evicted, "no eviction before the timeout"
        result = engine.schedule(deadline)
        assert [(e.key, e.reason) for e in result.evicted] == [(key, "PodsReadyTimeout")]
        assert result.evicted[0].requeue_at == deadline + backoff
        assert not result.admitted, "a workload in backoff is not admitted again at once"
        assert engine.next_timer() == deadline + backoff
        assert not engine.schedule(deadline + backoff - 1).admitted, "still in backoff"
        admitted_at = deadline + backoff
        assert [a.key for a in engine.schedule(admitted_at).admitted] == [key], "requeued when the backoff expires"
    result = engine.schedule(admitted_at + 60)
    assert [e.key for e in result.evicted] == [key]
    assert result.evicted[0].requeue_at is None, "the fourth eviction exceeds backoffLimitCount 3"
    assert engine.next_timer() is None
    report = workload_report(engine, engine.workloads[key])
    assert report["status"] == "Inadmissible"
    assert "RequeuingLimitExceeded" in report["reason"]
    assert not engine.schedule(admitted_at + 10_000).admitted, "a deactivated workload does not come back"


def test_pods_ready_in_time_disarms_the_timeout() -> None:
    engine = _engine(EngineConfig(wait_for_pods_ready=WaitForPodsReady(timeout_seconds=60)))
    key = engine.submit(_workload("ready", 4).obj(), now=0)
    engine.schedule(0)
    engine.pods_ready(key, now=30)
    assert engine.next_timer() is None
    assert not engine.schedule(1000).evicted


def test_no_timers_without_wait_for_pods_ready() -> None:
    engine = _engine()
    engine.submit(_workload("plain", 4).obj(), now=0)
    engine.schedule(0)
    assert engine.next_timer() is None


def test_finish_releases_quota_and_retries_parked_workloads() -> None:
    engine = _engine()
    first = engine.submit(_workload("first", 4, created=1).obj(), now=0)
    second = engine.submit(_workload("second", 3, created=2).obj(), now=0)
    result = engine.schedule(0)
    assert [a.key for a in result.admitted] == [first]
    assert second in result.pending
    assert not engine.schedule(1).admitted, "nothing changed: the parked workload stays parked"
    engine.finish(first, now=2)
    assert engine.model.cluster_queues["team-a"].node.usage.get(("default", "cpu"), 0) == 0
    assert [a.key for a in engine.schedule(2).admitted] == [second]
    assert workload_report(engine, engine.workloads[first])["status"] == "Finished"


def _borrowing_engine() -> AdmissionEngine:
    engine = AdmissionEngine()
    engine.apply(flavor("h100"))
    engine.apply(
        ClusterQueueBuilder("team-a").cohort("research").quota("h100", "nvidia.com/gpu", 32, borrowing_limit=16).obj()
    )
    engine.apply(ClusterQueueBuilder("team-b").cohort("research").quota("h100", "nvidia.com/gpu", 64).obj())
    engine.apply(local_queue("main", "team-a", "team-a"))
    return engine


def _gpus(count: int) -> WorkloadBuilder:
    return WorkloadBuilder(f"gpus-{count}", "team-a").queue("main").pod_set(count=count // 8, nvidia_com_gpu="8")


def test_never_fits_names_the_numbers_beyond_nominal_plus_borrowing() -> None:
    reason = _borrowing_engine().never_fits_reason(_gpus(64).obj())
    assert reason is not None
    assert "needs 64 nvidia.com/gpu" in reason
    assert "team-a can reach 48 with borrowing" in reason


@pytest.mark.parametrize("gpus", [8, 32, 48], ids=["small", "nominal", "nominal-plus-borrowing-limit"])
def test_never_fits_is_none_when_it_could_fit_on_an_empty_cluster(gpus: int) -> None:
    engine = _borrowing_engine()
    # even with the cohort full right now: the check is about an empty cluster
    engine.submit(WorkloadBuilder("hog", "team-a").queue("main").pod_set(count=6, nvidia_com_gpu="8").obj(), now=0)
    engine.schedule(0)
    assert engine.never_fits_reason(_gpus(gpus).obj()) is None


def test_never_fits_names_a_missing_local_queue() -> None:
    workload = WorkloadBuilder("lost", "team-a").queue("no-such-queue").pod_set(cpu="1").obj()
    reason = _borrowing_engine().never_fits_reason(workload)
    assert reason is not None
    assert "no-such-queue" in reason
