"""`trainyard queues what-if`: the same seed gives the same numbers, more quota gives less wait."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulations.cluster_spec import ClusterSpec
from simulations.scenarios import build
from simulations.scenarios.catalogue import steady_scenario
from simulations.whatif import Rehearsal, apply_changes, parse_change, rehearsal_from_queues, run_one
from simulations.whatif.outcome import describe_change, why_worse
from simulations.whatif.runs import measured_window
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, ResourceFlavorBuilder, WorkloadBuilder
from trainyard.cli.main import main


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@pytest.fixture
def small_queues(tmp_path: Path) -> Path:
    """Two teams of 4 CPUs each; team-x has a backlog of 2-CPU jobs that arrived over the last hour."""
    documents: list[dict[str, Any]] = [ResourceFlavorBuilder("default").doc()]
    for team in ("team-x", "team-y"):
        documents.append(ClusterQueueBuilder(team).quota("default", "cpu", 4).doc())
        documents.append(LocalQueueBuilder("jobs", team).cluster_queue(team).doc())
    now = time.time()
    for i in range(16):
        team = "team-x" if i % 4 else "team-y"
        job = WorkloadBuilder(f"job-{i}", team).queue("jobs").spec(maximumExecutionTimeSeconds=900).pod_set(cpu="2")
        document = job.doc()
        document["metadata"]["creationTimestamp"] = _stamp(now - 3600 + 200 * i)
        documents.append(document)
    path = tmp_path / "queues.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return tmp_path


def _what_if(capsys: pytest.CaptureFixture[str], objects: Path, *changes: str) -> dict[str, Any]:
    argv = ["queues", "what-if", *changes, "--objects", str(objects), "--seed", "7", "--processes", "2"]
    assert main([*argv, "--output", "json"]) == 0
    report = dict(json.loads(capsys.readouterr().out))
    report.pop("wall_seconds")
    # the window ends with the last event, whose time follows the wall clock the objects' ages
    # are measured from: the one figure that is not the seed's alone
    report["window"].pop("to_s")
    return report


def test_same_seed_same_numbers(small_queues: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _what_if(capsys, small_queues, "quota:team-x:default:cpu=8")
    second = _what_if(capsys, small_queues, "quota:team-x:default:cpu=8")
    assert first == second
    assert first["base"]["team-x"]["jobs"] > 12  # the backlog and the replayed last hour


def test_more_quota_means_less_wait(small_queues: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _what_if(capsys, small_queues, "quota:team-x:default:cpu=8", "rate:team-y=2")
    more_quota = report["variants"]["quota:team-x:default:cpu=8"]["per_queue"]["team-x"]
    assert more_quota["wait_p50_s"]["variant"] < more_quota["wait_p50_s"]["base"]
    assert more_quota["wait_p95_s"]["variant"] < more_quota["wait_p95_s"]["base"]
    assert more_quota["utilization"]["base"] > 0
    busier = report["variants"]["rate:team-y=2"]["per_queue"]["team-y"]
    # twice the replayed arrivals: the backlog stays, each arrival of the last hour comes twice
    assert busier["jobs"]["variant"] > busier["jobs"]["base"]
    assert busier["wait_p95_s"]["variant"] >= busier["wait_p95_s"]["base"]


def test_table_output_and_plots(small_queues: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "plots"
    argv = ["queues", "what-if", "quota:team-x:default:cpu=8", "--objects", str(small_queues)]
    assert main([*argv, "--out", str(out_dir), "--processes", "1"]) == 0
    text = capsys.readouterr().out
    assert "what if quota:team-x:default:cpu=8" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert (out_dir / "base").is_dir()
    assert any((out_dir / "variant-1").glob("*.png"))


def test_an_unknown_change_is_a_clear_error(small_queues: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queues", "what-if", "grow:team-x", "--objects", str(small_queues)]) == 2
    assert "unknown change" in capsys.readouterr().err


# ------------------------------------------------------------------ one window, said (issue 32)

TINY = ClusterSpec(spines_per_zone=1, blocks_per_spine=4, nodes_per_block=8)  # 32 nodes, 256 GPUs


@pytest.fixture(scope="module")
def steady() -> Rehearsal:
    """A steady-state scenario with a warm-up, small enough to run in seconds."""
    scenario = steady_scenario("tiny", TINY, horizon=12 * 3600.0, warmup=4 * 3600.0, load=1.6)
    return Rehearsal(build(scenario))


def test_the_figures_cover_the_measured_window_as_the_report_and_plots_do(steady: Rehearsal) -> None:
    run = run_one("base", steady, 1)
    summary = run.result.summary
    warmup = summary["window"]["warmup_seconds"]
    for queue, figures in run.per_queue.items():
        # the same p95 as simulate's report and the plots (both read queue_wait_seconds)
        assert figures["wait_p95_s"] == summary["queue_wait_seconds"][queue]["p95"]
        assert figures["wait_p50_s"] == summary["queue_wait_seconds"][queue]["p50"]
    window = measured_window(run.result)
    assert window["from_s"] == warmup
    assert window["warmup_jobs_left_out"] > 0
    assert run.per_queue["team-a"]["jobs"] < summary["jobs"]["submitted"]


def test_a_quota_cut_that_hurts_its_own_queue_is_explained_from_the_run(steady: Rehearsal) -> None:
    text = "quota:team-c:gpu-h100:nvidia.com/gpu=4"
    summary = describe_change(text, steady)
    assert summary.target == "team-c"
    assert summary.words == "team-c's nominal nvidia.com/gpu in gpu-h100: 38 → 4 (lowered)"
    base = run_one("base", steady, 1)
    cut = run_one(text, apply_changes(steady, [parse_change(text)], 1), 1)
    lines = why_worse(summary, base.per_queue, cut.per_queue, "GPUs")
    assert lines is not None
    assert lines[0].startswith("team-c's wait p95 rose ")
    assert lines[0].endswith("the change: team-c's nominal nvidia.com/gpu in gpu-h100: 38 → 4 (lowered)")
    findings = " ".join(lines[1:])
    assert "it leaned more on borrowed quota" in findings
    assert "its jobs were preempted more often" in findings
    assert "nothing in the run explains it" not in findings
    # a change that helps its queue needs no explanation
    assert why_worse(summary, cut.per_queue, cut.per_queue, "GPUs") is None


def test_the_table_says_its_window_and_units(small_queues: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["queues", "what-if", "quota:team-x:default:cpu=8", "--objects", str(small_queues), "--processes", "1"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "team-x's nominal cpu in default: 4 → 8 (raised)" in " ".join(text.split())
    assert "Util %nom" in text
    assert "Borrow" in text
    assert "Borrow: mean CPU cores borrowed beyond nominal, time-weighted" in " ".join(text.split())
    assert "jobs submitted 0.0–" in text
    report = _what_if(capsys, small_queues, "quota:team-x:default:cpu=8")
    assert report["window"]["from_s"] == 0.0
    assert report["notes"][0].startswith("rehearsed ")


def test_recent_arrivals_that_finished_are_replayed_and_counted(tmp_path: Path) -> None:
    """On a cluster most recent arrivals have finished: they still arrived, so they are replayed."""
    now = time.time()
    objects: list[Any] = [
        ResourceFlavorBuilder("default").doc(),
        ClusterQueueBuilder("team-x").quota("default", "cpu", 4).doc(),
        LocalQueueBuilder("jobs", "team-x").cluster_queue("team-x").doc(),
    ]
    documents = []
    for index, state in enumerate(("Finished", "Finished", "Finished", "Admitted", "Pending")):
        job = WorkloadBuilder(f"job-{index}", "team-x").queue("jobs").pod_set(cpu="1")
        if state != "Pending":
            job = job.admitted("team-x", {"cpu": "default"})
        document = job.doc()
        document["metadata"]["creationTimestamp"] = _stamp(now - 3000 + 100 * index)
        if state == "Finished":
            document["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded"})
        documents.append(document)
    path = tmp_path / "queues.yaml"
    path.write_text(yaml.safe_dump_all([*objects, *documents]))
    from scheduler.api.loading import load_kueue_objects

    loaded = load_kueue_objects([path])
    rehearsal = rehearsal_from_queues(loaded.objects, loaded.workloads, loaded.namespaces, now=now)
    assert rehearsal.notes[0] == (
        "rehearsed 1 admitted workloads (their remaining run), 1 pending and 5 arrivals of the last 24 h replayed"
    )
    assert rehearsal.built.job_count == 7
