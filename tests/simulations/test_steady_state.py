"""Steady-state workloads: diurnal arrivals, per-team mixes, the warm-up, and what a busy run shows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from simulations.arrivals import generate_jobs
from simulations.cluster_spec import ClusterSpec
from simulations.errors import SimulationInputError
from simulations.events import RandomStreams
from simulations.report import unfinished_table
from simulations.scenarios import BUILTIN, build, load_scenario_file
from simulations.scenarios.catalogue import STEADY_TEAMS, steady_scenario, steady_workload
from simulations.simulator import Simulation, SimulationResult
from simulations.steady import DAY, mean_rate
from simulations.workloads import JobSpec
from trainyard.cli.main import main

QUARTER = ClusterSpec(spines_per_zone=1, blocks_per_spine=8, nodes_per_block=32)  # 256 nodes, 2,048 GPUs


def jobs_of(horizon: float = DAY, gpus: int = 2048) -> list[JobSpec]:
    workload = steady_workload(1.0, horizon)
    return list(generate_jobs(workload, gpus, 8, RandomStreams(3), topology_levels=QUARTER.levels))


def test_diurnal_arrivals_fill_the_horizon_peak_at_noon_and_offer_the_load() -> None:
    jobs = jobs_of(2 * DAY)
    times = np.array([job.submit_time for job in jobs])
    assert times.max() < 2 * DAY
    assert times.max() > 2 * DAY - 3600
    hour = (times % DAY) / 3600.0
    day, night = np.sum((hour >= 6) & (hour < 18)), np.sum((hour < 6) | (hour >= 18))
    assert day > 1.5 * night  # ± 40 % around the mean: noon's half-day gets (1 + 0.4·2/π)/(1 − 0.4·2/π) ≈ 1.7×
    workload = steady_workload(1.0, 2 * DAY)
    assert len(jobs) == pytest.approx(mean_rate(workload, 2048) * 2 * DAY, rel=0.1)
    offered = sum(job.gpus * job.duration for job in jobs) / (2048 * 2 * DAY)
    assert 0.8 < offered < 1.25  # heavy-tailed durations: the sample's load is near the target


def test_each_team_draws_from_its_own_mix() -> None:
    jobs = jobs_of()
    by_team = {t.name: [job for job in jobs if job.team == t.name] for t in STEADY_TEAMS}
    assert max(job.gpus for job in by_team["team-b"]) <= 8  # Philly: 1-8 GPUs
    assert max(job.gpus for job in by_team["team-a"]) > 64  # Kalos: gangs of hundreds of GPUs
    assert {job.priority_class for job in by_team["team-c"]} <= {"low", "high"}
    assert all(job.duration <= DAY / 2 for job in jobs)  # the 12 h clip
    shares = {name: len(team) / len(jobs) for name, team in by_team.items()}
    assert shares["team-c"] == pytest.approx(0.3, abs=0.03)


def test_the_same_seed_gives_the_same_jobs() -> None:
    assert [dataclasses.astuple(j) for j in jobs_of()[:200]] == [dataclasses.astuple(j) for j in jobs_of()[:200]]


@pytest.fixture(scope="module")
def busy() -> SimulationResult:
    """gpu-1k's scenario on a quarter of its cluster: the same teams, mixes, quotas and load."""
    return Simulation(build(steady_scenario("gpu-256", QUARTER)), 1).run()


def test_a_steady_run_is_busy_queues_borrows_and_preempts(busy: SimulationResult) -> None:
    summary = busy.summary
    assert busy.invariants_held
    assert summary["allocation"]["mean_fraction"] >= 0.7
    waiting = [q for q, waits in summary["queue_wait_seconds"].items() if (waits["mean"] or 0) > 0]
    assert len(waiting) >= 2, summary["queue_wait_seconds"]
    assert any(amount > 0 for amount in summary["borrowing_mean"].values())
    assert summary["preemptions"]["total"] >= 1


def test_the_warm_up_is_left_out_and_the_report_says_so(busy: SimulationResult) -> None:
    window = busy.summary["window"]
    assert window["warmup_seconds"] == 8 * 3600.0
    assert window["measured_seconds"] == pytest.approx(DAY - 8 * 3600.0)
    assert "warm-up" in window["note"]
    in_warmup = window["jobs_submitted_in_warmup"]
    assert in_warmup > 0
    measured = sum(len(w) for w in busy.wait_times.values())
    admitted = busy.summary["jobs"]["admitted"]
    assert measured <= admitted - in_warmup + busy.summary["jobs"]["never_ran"]
    assert busy.summary["queue_wait_seconds_all"]["count"] == measured


def test_every_unfinished_job_is_listed_with_a_reason(busy: SimulationResult) -> None:
    jobs = busy.summary["jobs"]
    listed = {job["job"] for job in busy.unfinished} | {job["job"] for job in busy.never_ran}
    assert len(listed) == jobs["unfinished"]
    assert all(job["reason"] for job in busy.unfinished + busy.never_ran)
    running = [job for job in busy.unfinished if job["state"] == "running"]
    assert running
    assert all("running when the run ended at 86,400 s" in job["reason"] for job in running)
    # a preempted job starts over: its time left counts from the admission it holds
    assert all(job["due_to_finish"] > DAY for job in running)
    assert all(job["running_since"] >= job["admitted"] for job in running)
    assert busy.to_dict()["unfinished_jobs"] == busy.unfinished
    assert "unfinished" in str(unfinished_table(busy).title)


def test_builtin_names_and_their_bursts() -> None:
    assert {"gpu-1k", "gpu-1k-burst", "gpu-10k", "gpu-10k-burst", "kueue-baseline", "kueue-large"} <= set(BUILTIN)
    steady = BUILTIN["gpu-1k"]
    assert steady.workload is not None
    assert steady.workload.arrivals == "diurnal"
    assert 0.9 <= steady.workload.load <= 1.2
    assert steady.warmup_seconds > 0
    burst = BUILTIN["gpu-1k-burst"]
    assert burst.workload is not None
    assert (burst.workload.jobs, burst.workload.load) == (2000, 2.0)
    assert burst.warmup_seconds == 0


STEADY_FILE = """\
name: small-steady
cluster: {spinesPerZone: 1, blocksPerSpine: 2, nodesPerBlock: 8}
teams:
- {name: team-a, share: 0.5, mix: philly, durationScale: 0.1}
- {name: team-b, share: 0.5, arrivalWeight: 2}
workload: {mix: helios, load: 1.0, arrivals: diurnal, diurnalAmplitude: 0.3, horizonSeconds: 21600}
warmupSeconds: 3600
"""


def test_a_steady_scenario_file_runs(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(STEADY_FILE)
    scenario = load_scenario_file(path)
    assert scenario.workload is not None
    assert scenario.workload.horizon == 21600
    assert scenario.workload.teams[0].mix == "philly"
    result = Simulation(build(scenario), 1).run()
    assert result.summary["window"]["warmup_seconds"] == 3600
    assert result.summary["virtual_seconds"] <= 21600


@pytest.mark.parametrize(
    ("replace", "line", "field", "words"),
    [
        ("diurnalAmplitude: 0.3", 6, "workload.diurnalAmplitude", "below 1"),
        ("arrivals: diurnal", 6, "workload.arrivals", "poisson or diurnal"),
        ("mix: philly", 4, "teams[0].mix", "unknown mix"),
        ("name: team-a", 4, "teams[0]", "DNS-1123"),
        ("warmupSeconds: 3600", 7, "warmupSeconds", "a number"),
    ],
)
def test_bad_steady_fields_name_line_and_field(tmp_path: Path, replace: str, line: int, field: str, words: str) -> None:
    bad = {
        "diurnalAmplitude: 0.3": "diurnalAmplitude: 1.5",
        "arrivals: diurnal": "arrivals: bursty",
        "mix: philly": "mix: phily",
        "name: team-a": "name: Team_A",
        "warmupSeconds: 3600": "warmupSeconds: soon",
    }[replace]
    path = tmp_path / "s.yaml"
    path.write_text(STEADY_FILE.replace(replace, bad))
    with pytest.raises(SimulationInputError) as caught:
        load_scenario_file(path)
    message = str(caught.value)
    assert f"s.yaml:{line}" in message
    assert field in message
    assert words in message


def test_cli_refuses_a_bad_team_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(STEADY_FILE.replace("name: team-b", "name: Team_B"))
    assert main(["simulate", "--scenario", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert "teams[1]" in err
    assert "ClusterQueue" in err
    assert "Traceback" not in err
