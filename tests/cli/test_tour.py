"""`trainyard cluster-demo`: the tour runs the real controllers on the sandbox API server and tells
what the server says happened (admissions with placements, a pending reason and position, a
preemption, pods on their placed nodes, completions, quota released)."""

from __future__ import annotations

import re

import pytest

from sandbox.embedded import LOCAL_INFORMERS, LocalCluster
from trainyard.cli.cluster_demo.seed import cluster_objects
from trainyard.cli.cluster_demo.watch import ClusterWatch, TourTimeout
from trainyard.cli.demo import steps
from trainyard.cli.main import main


def test_the_tour_shows_admission_pending_preemption_and_completion_as_read_from_the_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "220")  # one line per table row, so rows can be matched
    code = main(["cluster-demo"])
    out, err = capsys.readouterr()
    assert code == 0, f"stdout:\n{out}\nstderr:\n{err}"

    # Workload names carry the hash the queue controller derives from the TrainJob's uid: they
    # can only have come from the server.
    created = dict(re.findall(r"created Workload (trainjob-[a-z-]+-[0-9a-f]{5}) for TrainJob (\S+):", out))
    by_job = {job: workload for workload, job in created.items()}
    assert set(by_job) == {"team-a/pretrain", "team-b/finetune"}, out

    found = re.findall(r"admitted Workload (\S+) \(TrainJob (\S+)\) in ClusterQueue (\S+):", out)
    admitted = {workload: job for workload, job, _ in found}
    assert {(job, queue) for _, job, queue in found} == {
        ("pretrain", "team-a"),
        ("finetune", "team-b"),
        ("urgent-eval", "team-a"),
    }
    assert admitted[by_job["team-a/pretrain"]] == "pretrain"
    assert admitted[by_job["team-b/finetune"]] == "finetune"
    assert "urgent-eval" in admitted.values()
    placements = re.findall(r"in ClusterQueue \S+: flavor h100, topologyAssignment → (gpu-b\d-h\d), (gpu-b\d-h\d)", out)
    assert len(placements) == 3
    for first, second in placements:  # a 2-node gang required in one block
        assert first != second, placements
        assert first[:6] == second[:6], placements

    pending = re.search(r"QuotaReserved=False reason=Pending: (.*\(position \d+ in ClusterQueue team-a\))", out)
    assert pending is not None, out
    assert "nvidia.com/gpu" in pending.group(1)

    preempted = re.search(r"preempted Workload (\S+) \(TrainJob team-a/pretrain\)", out)
    assert preempted is not None, out
    assert preempted.group(1) == by_job["team-a/pretrain"]
    assert "Evicted=True reason=Preempted" in out
    assert re.search(r"Preempted=True reason=InClusterQueue: .*key: team-a/trainjob-urgent-eval-[0-9a-f]{5}", out)

    pod_rows = re.findall(r"│ (urgent-eval-node-\S+)\s+│ (gpu-\S+)\s+│ (gpu-\S+)\s+│ none", out)
    assert len(pod_rows) == 2, out
    assert all(placed == bound for _, placed, bound in pod_rows)

    # The summary: every TrainJob complete; the preempted one went Preempted -> Admitted again.
    for job in ("team-a/pretrain", "team-b/finetune", "team-a/sweep", "team-a/urgent-eval"):
        row = next((line for line in out.splitlines() if line.startswith(f"│ {job} ")), None)
        assert row is not None, out
        assert "TrainJob Complete" in row, row
        assert row.rstrip(" │").endswith("Complete"), row
    pretrain_row = next(line for line in out.splitlines() if line.startswith("│ team-a/pretrain "))
    assert re.search(r"Admitted → Preempted → Admitted → Finished \(Succeeded\)", pretrain_row), pretrain_row
    sweep_row = next(line for line in out.splitlines() if line.startswith("│ team-a/sweep "))
    assert "Pending → Admitted" in sweep_row, sweep_row
    # ...and at the end no Workload holds quota.
    final_usage = out.rsplit("ClusterQueues (from the Workloads' admissions on the server)", 1)[1]
    assert re.search(r"│ team-a\s+│ 16 \(h100\)\s+│ 0\s+│ -", final_usage), final_usage
    assert re.search(r"│ team-b\s+│ 16 \(h100\)\s+│ 0\s+│ -", final_usage), final_usage


def test_a_state_not_reached_in_time_is_a_clear_error_with_exit_code_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["cluster-demo", "--step-timeout", "0.001"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "trainyard cluster-demo: " in err
    assert "the controller service did not start leading within 0.001s" in err
    assert "Traceback" not in err + out


async def test_waiting_for_a_state_the_server_never_shows_raises_tour_timeout_naming_it() -> None:
    async with (
        LocalCluster(cluster_objects()) as cluster,
        ClusterWatch(cluster.client, LOCAL_INFORMERS, kinds=("Workload", "ClusterQueue")) as watch,
    ):
        assert [q["metadata"]["name"] for q in watch.of_kind("ClusterQueue")] == ["team-a", "team-b"]
        with pytest.raises(TourTimeout, match=r"timed out after 0.2s waiting for the Workload of team-a/nothing"):
            await watch.wait_for(
                lambda: watch.workload_of("team-a", "nothing"), timeout=0.2, what="the Workload of team-a/nothing"
            )


def test_the_demo_includes_the_cluster_tour_also_when_quick() -> None:
    for quick in (True, False):
        assert ["cluster-demo"] in [command for _, command in steps(quick)]
