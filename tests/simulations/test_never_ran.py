"""Jobs that never ran are listed with the engine's reason, in the JSON and the printed report."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from simulations.report import never_ran_table
from simulations.scenarios import build, load_scenario_file
from simulations.simulator import Simulation, SimulationResult
from trainyard.cli.main import main

# 4 nodes of 8 GPUs (32 GPUs); two teams, one cohort
SCENARIO = """\
name: never-ran
cluster: {spinesPerZone: 1, blocksPerSpine: 1, nodesPerBlock: 4}
teams:
- {name: team-a, share: 0.5}
- {name: team-b, share: 0.5}
trace: jobs.csv
"""
HEADER = "submit_time,team,nodes,gpus_per_node,duration,priority\n"


def scenario_file(tmp_path: Path, rows: str) -> Path:
    (tmp_path / "jobs.csv").write_text(HEADER + rows)
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    return path


def simulate(path: Path, horizon: float | None = None) -> SimulationResult:
    return Simulation(build(load_scenario_file(path)), 1, horizon=horizon).run()


def test_gang_larger_than_the_cluster_is_listed_with_the_shortage(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        "0,team-a,8,8,600,normal\n"  # 64 GPUs on a 32-GPU cluster
        "0,team-a,4,8,600,normal\n"  # the whole cluster: fits when it is empty
        "10,team-b,1,8,300,normal\n",
    )
    result = simulate(path)
    jobs = result.summary["jobs"]
    assert (jobs["submitted"], jobs["finished"], jobs["never_ran"]) == (3, 2, 1)
    assert [job["job"] for job in result.never_ran] == ["team-a/job-000000"]
    (gang,) = result.never_ran
    assert gang["never_fits"] is True
    assert (gang["pods"], gang["gpus_per_pod"], gang["amount"]) == (8, 8, 64)
    # the engine names the resource, what the gang needs and what the queue can reach
    assert "needs" in gang["reason"]
    assert "can reach" in gang["reason"]
    assert "with borrowing" in gang["reason"]
    assert result.to_dict()["never_ran"] == result.never_ran


def test_a_job_cut_off_by_the_horizon_gets_the_engines_waiting_reason(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, "0,team-a,4,8,3600,normal\n5,team-a,1,8,60,normal\n")
    result = simulate(path, horizon=15.0)
    assert result.summary["jobs"]["never_ran"] == 1
    (waiting,) = result.never_ran
    assert waiting["job"] == "team-a/job-000001"
    assert waiting["never_fits"] is False
    # the engine's pending reason from its last cycle: the cluster is full, no quota is left
    assert "insufficient unused quota for nvidia.com/gpu" in waiting["reason"]
    # once the run drains, the same job ran and nothing is listed
    drained = simulate(path)
    assert drained.never_ran == []
    assert drained.summary["jobs"]["never_ran"] == 0
    assert drained.summary["jobs"]["finished"] == 2


def test_printed_table_is_capped_with_a_count(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, "".join(f"{i},team-a,5,8,60,normal\n" for i in range(13)))
    result = simulate(path)
    assert len(result.never_ran) == 13
    console = Console(width=200, record=True)
    console.print(never_ran_table(result, limit=10))
    text = console.export_text()
    assert "13 job(s) never ran (13 can never fit)" in text
    assert "team-a/job-000009" in text
    assert "team-a/job-000010" not in text
    assert "... and 3 more" in text


def test_cli_json_and_report_list_the_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario_file(tmp_path, "0,team-b,9,8,600,normal\n1,team-b,1,8,60,normal\n")
    assert main(["simulate", "--scenario", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jobs"]["never_ran"] == 1
    assert [job["job"] for job in data["never_ran"]] == ["team-b/job-000000"]
    assert main(["simulate", "--scenario", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "2 / 1 / 1" in printed  # submitted / finished / never ran
    assert "team-b/job-000000" in printed
    assert "never fits" in printed


def test_a_preempted_job_running_at_the_end_counts_its_time_left_from_its_latest_start(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        "0,team-a,2,8,1000,low\n"  # team-a's whole nominal quota, for 1,000 s
        "0,team-b,2,8,2000,normal\n"  # team-b's: nothing left to borrow
        "10,team-a,2,8,100,high\n",  # preempts the low job, which starts over when it ends (~110 s)
    )
    result = simulate(path, horizon=500.0)
    job, other = result.unfinished
    assert (job["job"], other["job"]) == ("team-a/job-000000", "team-b/job-000001")
    assert (other["admitted"], other["running_since"], other["preemptions"]) == (0.0, 0.0, 0)
    assert (job["state"], job["preemptions"]) == ("running", 1)
    assert job["admitted"] == 0.0
    assert job["running_since"] > 110.0
    # due 1,000 s after its second start, not its first (which would have been at 1,000 s + pod start-up)
    assert job["due_to_finish"] > job["running_since"] + 1000.0
    assert "started over: preempted or evicted 1 time(s) before" in job["reason"]
    assert "running when the run ended at 500 s" in job["reason"]


# a job that fits the empty cluster: up to 4 pods of up to 8 GPUs (4 nodes of 8), any team, any priority
FITTING_JOB = st.tuples(
    st.integers(0, 600),  # submit time
    st.sampled_from(["team-a", "team-b"]),
    st.integers(1, 4),  # pods
    st.integers(0, 8),  # GPUs per pod
    st.integers(1, 3600),  # duration
    st.sampled_from(["low", "normal", "high"]),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FITTING_JOB, min_size=1, max_size=12))
def test_every_job_that_fits_the_empty_cluster_runs_once_it_drains(
    jobs: list[tuple[int, str, int, int, int, str]],
) -> None:
    """Whatever the contention, preemptions and priorities on the way, a run left to drain
    admits and finishes every job that fits an empty cluster: nothing is starved for good."""
    rows = "".join(
        f"{t},{team},{pods},{gpus},{duration},{priority}\n" for t, team, pods, gpus, duration, priority in jobs
    )
    with tempfile.TemporaryDirectory() as directory:
        result = simulate(scenario_file(Path(directory), rows))
    assert result.invariants_held
    assert result.never_ran == []
    assert result.unfinished == []
    counts = result.summary["jobs"]
    assert (counts["submitted"], counts["admitted"], counts["finished"]) == (len(jobs), len(jobs), len(jobs))
