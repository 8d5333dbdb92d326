"""Whole runs through the real engine: invariants in every run, determinism, failures, reports."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from simulations.errors import SimulationInputError
from simulations.kwok.cluster_run import WorkloadEventCollector
from simulations.metrics import MetricsRecorder, percentiles
from simulations.report import write_json, write_plots
from simulations.scenarios import (
    BUILTIN,
    FailureSpec,
    KueuePerfSpec,
    Scenario,
    build,
    load_scenario_file,
    with_trace,
)
from simulations.simulator import Simulation, SimulationResult
from simulations.traces import BUNDLED_OPENB_DIR
from simulations.workloads import JobSpec
from tests.simulations.simulation_support import small_scenario
from trainyard.cli.main import main


def run(scenario: Scenario, seed: int = 1) -> SimulationResult:
    simulation = Simulation(build(scenario), seed)
    result = simulation.run()
    # what is left never fits: gangs bigger than the whole cluster (Kalos has 1,024-GPU jobs)
    capacity = simulation.built.capacity
    assert all(job.gpus > capacity for job in simulation.jobs.values()), [j.gpus for j in simulation.jobs.values()]
    assert result.summary["jobs"]["unfinished"] == len(simulation.jobs)
    return result


def assert_invariants(result: SimulationResult) -> None:
    assert result.invariants["violations"] == 0, result.invariants["examples"]
    assert result.invariants["checked_admissions"] >= result.summary["jobs"]["finished"]


@pytest.fixture(scope="module")
def contended() -> SimulationResult:
    return run(small_scenario())


def test_contended_run_holds_every_invariant_and_finishes(contended: SimulationResult) -> None:
    assert_invariants(contended)
    jobs = contended.summary["jobs"]
    assert jobs["submitted"] == 150
    assert jobs["finished"] >= 140
    assert contended.summary["queue_wait_seconds_all"]["max"] > 0  # the cluster was contended
    assert contended.summary["allocation"]["mean_fraction"] > 0
    assert max(s.allocated for s in contended.samples) <= 256


def test_same_seed_same_run_other_seed_other_run(contended: SimulationResult) -> None:
    again = run(small_scenario())
    assert again.summary == contended.summary
    assert run(small_scenario(), seed=2).summary != contended.summary


def test_node_failures_evict_and_invariants_still_hold() -> None:
    result = run(small_scenario(failures=FailureSpec(node_mtbf_hours=20.0, repair_seconds=600.0)))
    assert_invariants(result)
    assert result.summary["evictions"].get("NodeFailure", 0) > 0
    assert result.summary["jobs"]["finished"] >= 140


def test_placements_are_scored_against_t_star(contended: SimulationResult) -> None:
    placement = contended.summary["placement"]
    assert sum(placement["tiers"].values()) >= 150
    assert sum(placement["gap_vs_t_star"].values()) >= 150
    assert min(int(gap) for gap in placement["gap_vs_t_star"]) >= 0


def test_kueue_perf_shape_runs_without_nodes() -> None:
    perf = KueuePerfSpec(
        cohorts=2, queues_per_cohort=3, classes=(("small", 20, 1, 0.2, 50, 0.1), ("large", 5, 20, 1.0, 200, 1.2))
    )
    scenario = dataclasses.replace(BUILTIN["kueue-baseline"], kueue_perf=perf)
    result = run(scenario)
    assert_invariants(result)
    assert result.summary["jobs"]["finished"] == 6 * 25
    assert result.summary["unit"] == "CPU cores"


def test_openb_slice_replays_on_its_own_nodes() -> None:
    scenario = with_trace(BUILTIN["gpu-1k"], BUNDLED_OPENB_DIR)
    built = build(scenario)
    assert len(built.nodes) == 1213
    jobs = built.jobs(None)  # type: ignore[arg-type]
    first = [job for _, job in zip(range(400), jobs, strict=False)]
    built.jobs = lambda _streams: iter(first)
    built.job_count = len(first)
    result = Simulation(built, 1).run()
    assert_invariants(result)
    assert result.summary["jobs"]["finished"] == 400


def test_reports_json_and_plots_are_written(contended: SimulationResult, tmp_path: Path) -> None:
    write_json([contended], tmp_path / "summary.json")
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["invariants"]["violations"] == 0
    assert set(data["queue_wait_seconds"]) == {"team-a", "team-b"}
    for path in write_plots(contended, tmp_path):
        assert path.stat().st_size > 5000
        assert path.read_bytes()[:4] == b"\x89PNG"


def test_scenario_file_round_trip_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "s.yaml"
    good.write_text(
        "name: tiny\ncluster: {spinesPerZone: 1, blocksPerSpine: 2, nodesPerBlock: 4}\n"
        "teams:\n- {name: team-a, share: 0.6}\n- {name: team-b, share: 0.4, borrowingLimitShare: 0.1}\n"
        "workload: {jobs: 30, mix: philly, load: 2.0, maxDurationSeconds: 3600}\n"
    )
    scenario = load_scenario_file(good)
    assert scenario.cluster is not None
    assert scenario.cluster.node_count == 8
    assert_invariants(run(scenario))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: tiny\nworkload:\n  jobs: 30\n  mix: alibaba\n")
    with pytest.raises(SimulationInputError) as caught:
        load_scenario_file(bad)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(bad), 4, "workload.mix")
    typo = tmp_path / "typo.yaml"
    typo.write_text("name: tiny\ncluster:\n  gpusPerNod: 8\n")
    with pytest.raises(SimulationInputError, match=r"typo.yaml:3: cluster.gpusPerNod: unknown field"):
        load_scenario_file(typo)


def test_cli_simulate_json_and_kwok_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: cli\ncluster: {spinesPerZone: 1, blocksPerSpine: 1, nodesPerBlock: 8}\nworkload: {jobs: 20}\n"
    )
    assert main(["simulate", "--scenario", str(scenario), "--json", "--out", str(tmp_path / "out")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jobs"]["submitted"] == 20
    assert data["jobs"]["finished"] >= 18
    assert (tmp_path / "out" / "wait_cdf.png").exists()
    assert main(["kwok", "export", "--scenario", str(scenario), "--out", str(tmp_path / "kwok")]) == 0
    assert (tmp_path / "kwok" / "10-nodes.yaml").read_text().count("kwok.x-k8s.io/node: fake") == 8
    assert main(["simulate", "--scenario", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_kwok_collector_turns_recorded_workload_events_into_metrics() -> None:
    job = JobSpec("j1", "team-a", 0.0, 2, 8, 60.0)
    metrics = MetricsRecorder(capacity=64, nominal={"team-a": 64})
    collector = WorkloadEventCollector(metrics, {"team-a/j1": job}, origin=1_700_000_000.0)
    collector.submitted("team-a/j1", "team-a", 0.0)

    def event(*conditions: tuple[str, str, str]) -> dict[str, object]:
        return {
            "type": "MODIFIED",
            "object": {
                "metadata": {"namespace": "team-a", "ownerReferences": [{"kind": "TrainJob", "name": "j1"}]},
                "status": {
                    "conditions": [
                        {"type": t, "status": "True", "reason": r, "lastTransitionTime": at} for t, r, at in conditions
                    ]
                },
            },
        }

    collector.handle_all(
        [
            event(("QuotaReserved", "QuotaReserved", "2023-11-14T22:13:30Z")),
            event(
                ("Evicted", "Preempted", "2023-11-14T22:13:40Z"),
                ("Preempted", "InCohortReclamation", "2023-11-14T22:13:40Z"),
            ),
            event(("QuotaReserved", "QuotaReserved", "2023-11-14T22:14:00Z")),
            event(
                ("QuotaReserved", "QuotaReserved", "2023-11-14T22:14:00Z"),
                ("Finished", "Succeeded", "2023-11-14T22:15:00Z"),
            ),
        ]
    )
    metrics.end_time = 200.0
    summary = metrics.summary()
    assert summary["queue_wait_seconds"]["team-a"]["p50"] == 10.0
    assert summary["preemptions"] == {"total": 1, "InCohortReclamation": 1}
    assert summary["completion_seconds"]["p50"] == 100.0
    assert metrics.allocated == 0


def test_percentiles_are_nearest_rank() -> None:
    stats = percentiles([float(v) for v in range(1, 101)])
    assert (stats["p50"], stats["p95"], stats["p99"]) == (50.0, 95.0, 99.0)


def test_kwok_collector_lists_every_unfinished_job_with_kueues_reason() -> None:
    names = ("done", "running", "waiting", "requeued", "late")
    jobs = {f"team-a/{name}": JobSpec(name, "team-a", float(i), 1, 8, 60.0) for i, name in enumerate(names)}
    metrics = MetricsRecorder(capacity=64, nominal={"team-a": 64})
    collector = WorkloadEventCollector(metrics, jobs, origin=1_700_000_000.0)
    for key in list(jobs)[:4]:  # "late" was never submitted
        collector.submitted(key, "team-a", 0.0)

    def event(name: str, *conditions: tuple[str, str, str]) -> dict[str, object]:
        return {
            "type": "MODIFIED",
            "object": {
                "metadata": {"namespace": "team-a", "ownerReferences": [{"kind": "TrainJob", "name": name}]},
                "status": {
                    "conditions": [
                        {"type": t, "status": s, "message": m, "lastTransitionTime": "2023-11-14T22:13:30Z"}
                        for t, s, m in conditions
                    ]
                },
            },
        }

    short = "couldn't assign flavors to pod set trainer: insufficient unused quota for nvidia.com/gpu"
    collector.handle_all(
        [
            event("done", ("QuotaReserved", "True", ""), ("Finished", "True", "")),
            event("running", ("QuotaReserved", "True", "")),
            event("waiting", ("QuotaReserved", "False", short)),
            event("requeued", ("QuotaReserved", "True", "")),
            event("requeued", ("Evicted", "True", "Preempted"), ("QuotaReserved", "False", short)),
        ]
    )
    listed = {job["job"].split("/")[1]: job for job in collector.unfinished(500.0)}
    assert set(listed) == {"running", "waiting", "requeued", "late"}
    assert [listed[name]["state"] for name in ("running", "waiting", "requeued", "late")] == [
        "running",
        "pending",
        "requeued",
        "unsubmitted",
    ]
    assert listed["waiting"]["reason"] == short
    assert listed["requeued"]["reason"] == f"removed 1 time(s) (preempted or evicted), waiting again: {short}"
    assert "not submitted before the run stopped at 500 s" in listed["late"]["reason"]
