"""The service in a sandbox agrees with the embedded simulator, decision by decision.

A small GPU cluster under contention (waits, a preemption by a high-priority job, jobs that can
never fit) runs through trainyard's controllers and the stand-ins in lockstep virtual time and
through the embedded simulator; every job must get the same decisions at the same instants.
"""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.compare.comparison import Comparison, comparable, compare, simulate_recorded
from sandbox.compare.records import Decision, RunRecord
from simulations.cluster_spec import ClusterSpec
from simulations.errors import SimulationInputError
from simulations.scenarios import BUILTIN, FailureSpec, Scenario, build
from simulations.workloads import SyntheticWorkload
from trainyard.cli.simulate.sandbox_backend import compare_backends

CONTENDED = Scenario(
    name="contended",
    cluster=ClusterSpec(zones=1, spines_per_zone=1, blocks_per_spine=2, nodes_per_block=2),
    workload=SyntheticWorkload(jobs=30, mix="kalos", load=4.0, max_duration=3600.0, high_priority_fraction=0.2),
)


def test_lockstep_sandbox_agrees_with_the_simulator_on_every_decision() -> None:
    report = compare_backends(build(comparable(CONTENDED)), seed=1)
    comparison = report["comparison"]
    assert comparison["first_difference"] is None, comparison["first_difference"]
    assert comparison["decisions_equal_pct"] == 100.0
    assert comparison["jobs"] == 30
    assert comparison["admissions"]["sandbox"] == comparison["admissions"]["simulator"] >= 28
    # the two jobs that can never fit: the validating webhook refused them at creation
    assert comparison["refused_never_fit"] == {"simulator": 2, "sandbox": 2}
    metrics: dict[str, dict[str, Any]] = {row["metric"]: row for row in report["metrics"]}
    # the scenario is contended: jobs wait, one is preempted, two can never fit
    assert metrics["preemptions"]["simulator"] >= 1
    assert metrics["wait mean s (all)"]["simulator"] > 0
    assert metrics["jobs admitted"]["simulator"] < metrics["jobs submitted"]["simulator"]
    for row in report["metrics"]:
        assert row["sandbox"] == row["simulator"], row
    assert report["sandbox"]["api_requests"] > 30 * 5  # every job went through the API


def _record(decisions: dict[str, list[Decision]]) -> RunRecord:
    record = RunRecord()
    for key, listed in decisions.items():
        for decision in listed:
            record.add(key, decision)
    return record


def test_compare_counts_a_different_flavor_time_or_missing_preemption_as_a_difference() -> None:
    admitted = Decision(10.0, "admitted", "team-a", (("nvidia.com/gpu", "h100"),), ("n1",))
    simulator = _record(
        {
            "a/same": [admitted],
            "a/flavor": [admitted],
            "a/late": [admitted],
            "a/preempted": [admitted, Decision(20.0, "preempted")],
        }
    )
    sandbox = _record(
        {
            "a/same": [admitted],
            "a/flavor": [Decision(10.0, "admitted", "team-a", (("nvidia.com/gpu", "a100"),), ("n1",))],
            "a/late": [Decision(10.5, "admitted", "team-a", (("nvidia.com/gpu", "h100"),), ("n1",))],
            "a/preempted": [admitted],
        }
    )
    jobs = ["a/same", "a/flavor", "a/late", "a/preempted"]
    result: Comparison = compare(simulator, sandbox, jobs)
    assert result.decisions_equal == 1
    assert result.differing == ["a/flavor", "a/late", "a/preempted"]
    assert result.decisions_equal_pct == 25.0
    # without times (a sped-up wall clock) the late admission is the same decision
    assert compare(simulator, sandbox, jobs, with_time=False).decisions_equal == 2


def test_scenarios_the_sandbox_cannot_follow_are_refused_by_name() -> None:
    with pytest.raises(SimulationInputError, match="failures"):
        comparable(Scenario(name="x", failures=FailureSpec(100.0, 60.0)))
    with pytest.raises(SimulationInputError, match="TrainJobs"):
        comparable(BUILTIN["kueue-baseline"])


def test_recorded_simulation_keeps_every_played_decision() -> None:
    result, record = simulate_recorded(build(comparable(CONTENDED)), seed=1)
    admitted = sum(1 for listed in record.decisions.values() for d in listed if d.kind == "admitted")
    preempted = sum(1 for listed in record.decisions.values() for d in listed if d.kind == "preempted")
    assert preempted == result.summary["preemptions"]["total"]
    assert admitted == result.summary["jobs"]["admitted"] + preempted  # a preempted job is admitted again
    assert len(record.jobs) == 30


def test_a_paced_report_says_why_decisions_differ_and_a_lockstep_one_that_timing_is_not_why() -> None:
    from trainyard.cli.simulate.sandbox_backend import why_they_differ

    report: dict[str, Any] = {
        "clock": "wall clock sped up 600x",
        "simulator": {"cycles": 120},
        "sandbox": {"cycles": 97},
        "comparison": {"admission_time_skew_seconds": {"mean": 0.8, "max": 3.5}},
    }
    paced = why_they_differ(report)
    assert "share one admission cycle (simulator 120 cycles, sandbox 97)" in paced
    assert "skew mean 0.8 s, max 3.5 s" in paced
    report["clock"] = "lockstep virtual time"
    assert "not timing" in why_they_differ(report)
