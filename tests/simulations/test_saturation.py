"""The openb trace two ways: saturation replay under placement policies, and what the timeline replay explains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from simulations.report import render_table
from simulations.saturation.paper import paper_rows
from simulations.saturation.replay import POLICIES, run_saturation
from simulations.saturation.report import rate_at, saturation_table, write_saturation_plot
from simulations.scenarios import BUILTIN, build, with_trace
from simulations.simulator import Simulation
from simulations.traces import BUNDLED_OPENB_DIR
from trainyard.cli.main import main

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
)


def trace_dir(tmp_path: Path, nodes: list[str], pods: list[str]) -> Path:
    root = tmp_path / "openb"
    root.mkdir()
    (root / "openb_node_list_gpu_node.csv").write_text(NODE_HEADER + "".join(nodes))
    (root / "openb_pod_list_default.csv").write_text(POD_HEADER + "".join(pods))
    return root


def fragmenting_trace(tmp_path: Path) -> Path:
    """16 nodes of 8 GPUs; 64 one-GPU pods (half of them GPU shares), then 8 whole-node pods.

    Packed, the small pods fill 8 nodes and the big ones the other 8: nothing is refused.
    Spread at random, the small pods touch most nodes and the big ones find no empty node.
    """
    nodes = [f"node-{i:02d},32000,262144,8,G2\n" for i in range(16)]
    pods = [f"small-{i:02d},2000,8192,1,{500 if i % 2 else 1000},,LS,Running,{i},1000000,{i}\n" for i in range(64)]
    pods += [f"big-{i},16000,131072,8,1000,,LS,Running,{100 + i},1000000,{100 + i}\n" for i in range(8)]
    return trace_dir(tmp_path, nodes, pods)


def test_packing_policies_allocate_more_than_random_before_the_first_refusal(tmp_path: Path) -> None:
    report = run_saturation(fragmenting_trace(tmp_path), list(POLICIES), seed=1)
    rows = {row["policy"]: row for row in report["policies"]}
    assert set(rows) == set(POLICIES)
    random = rows["random"]
    assert random["first_refusal"] is not None
    assert random["first_refusal"]["pod"].startswith("big-")
    for policy in ("trainyard", "first-fit", "best-fit", "kueue-bestfit", "kueue-leastfree", "fgd"):
        packed = rows[policy]
        at_refusal = (
            packed["allocation_ratio"]
            if packed["first_refusal"] is None
            else packed["first_refusal"]["allocation_ratio"]
        )
        assert at_refusal > random["first_refusal"]["allocation_ratio"], policy
        assert packed["unallocated_gpus"] < random["unallocated_gpus"], policy
    assert rows["first-fit"]["unallocated_gpus"] == 0
    # the free GPUs random leaves are stranded: no refused 8-GPU pod fits any of them
    assert random["fragmentation"]["stranded_gpus"] == random["fragmentation"]["free_gpus"] > 0
    assert report["fractional_gpu_pods"] == 32
    assert "rounded up" in report["fractional_gpus"]


def test_the_curve_follows_demand_until_the_first_refusal(tmp_path: Path) -> None:
    report = run_saturation(fragmenting_trace(tmp_path), ["random"], seed=1)
    (row,) = report["policies"]
    refusal = row["first_refusal"]["arrived_demand_ratio"]
    before = [(arrived, allocated) for arrived, allocated in row["curve"] if arrived < refusal]
    assert before
    assert all(arrived == pytest.approx(allocated) for arrived, allocated in before)
    assert row["arrived_gpu_demand"] == 64 + 64


def test_table_and_plot(tmp_path: Path) -> None:
    report = run_saturation(fragmenting_trace(tmp_path), ["first-fit", "random"], seed=1)
    table = saturation_table(report)
    assert [str(cell) for cell in table.columns[0]._cells] == ["first-fit", "random"]
    path = write_saturation_plot(report, tmp_path / "out" / "saturation.png")
    assert path.stat().st_size > 10_000


def test_cli_saturation_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = fragmenting_trace(tmp_path)
    args = ["simulate", "--trace", str(root), "--mode", "saturation", "--compare", "first-fit", "random", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert [row["policy"] for row in report["policies"]] == ["first-fit", "random"]
    assert {"allocation_ratio_at_first_refusal", "unallocated_gpus", "fragmentation"} <= set(report["policies"][0])
    refused = report["policies"][1]["refused"]
    assert refused > 0
    assert main(args[:-1]) == 0  # the table, then the refusals in words
    printed = capsys.readouterr().out
    assert "first-fit: 0 pod(s) refused (none)" in printed
    assert f"random: {refused} pod(s) refused ({refused} gpus)" in printed


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--compare", "worst-fit"], "'worst-fit' is not a placement policy"),
        (["--backend", "kwok", "--kubeconfig", "k"], "simulator only"),
    ],
)
def test_cli_saturation_refusals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: str
) -> None:
    root = fragmenting_trace(tmp_path)
    assert main(["simulate", "--trace", str(root), "--mode", "saturation", *extra]) == 2
    err = capsys.readouterr().err
    assert words in err
    assert "Traceback" not in err


def test_cli_saturation_needs_the_trace_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--mode", "saturation", "--trace", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "--trace DIR" in err
    assert "Traceback" not in err


def test_cli_trace_alone_replays_the_trace_shipped_with_the_project(capsys: pytest.CaptureFixture[str]) -> None:
    """`--trace` without a value (and saturation mode without --trace) reads simulations/data: a
    fresh clone with no sibling folders simulates the real trace."""
    assert main(["simulate", "--trace", "--mode", "saturation", "--compare", "first-fit", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["pods"], report["gpus"], report["nodes"]) == (8152, 6212, 1213)
    assert Path(report["trace"]).resolve() == BUNDLED_OPENB_DIR


def test_the_shipped_trace_names_its_source_and_terms() -> None:
    root = Path(__file__).resolve().parents[2]
    assert BUNDLED_OPENB_DIR.is_relative_to(root / "simulations")
    readme = (BUNDLED_OPENB_DIR / "README.md").read_text(encoding="utf-8")
    for words in ("alibaba/clusterdata", "cluster-trace-gpu-v2023", "ATC '23", "research or study"):
        assert words in readme, words
    sizes = [path.stat().st_size for path in BUNDLED_OPENB_DIR.glob("*.csv")]
    assert len(sizes) == 2
    assert sum(sizes) < 1_000_000  # sane for git: data shipped as plain files, not a large blob


def test_timeline_replay_explains_a_pod_that_only_another_flavor_could_hold(tmp_path: Path) -> None:
    """openb's five never-run pods in small: 8 GPUs and 120 cores fit only the 128-core model,
    but the quota fits the first flavor, so Kueue's flavor assignment never tries the other."""
    root = trace_dir(
        tmp_path,
        # two G2 nodes: the G2 flavor's quota (192 cores) holds the pod, no G2 host does
        ["g2-node-0,96000,786432,8,G2\n", "g2-node-1,96000,786432,8,G2\n", "g3-node,128000,786432,8,G3\n"],
        [
            "done,1000,1024,1,1000,,LS,Succeeded,0,50,1\n",
            "gone,1000,1024,1,1000,,BE,Failed,1,60,2\n",
            "wide,120000,655360,8,1000,,LS,Running,3,1000,\n",
            "late,1000,1024,0,0,,Burstable,Pending,4,2000,\n",
        ],
    )
    result = Simulation(build(with_trace(BUILTIN["gpu-1k"], root)), 1).run()
    notes = result.notes
    assert (notes["already_gone_pods"], notes["censored_pods"], notes["never_scheduled_pods"]) == (2, 2, 2)
    console = Console(width=200, record=True)
    render_table([result], console)
    assert "2 (50%) / 2 (50%); 2 (50%)" in console.export_text()
    (wide,) = result.never_ran
    assert wide["job"] == "openb/wide"
    assert wide["never_fits"] is True
    assert wide["fits_empty_node"] == "g3-node"
    assert "gpu-g3" in wide["reason"]
    assert result.summary.get("window", True)
    assert "window" not in result.summary  # a trace replay has no warm-up


def test_on_the_openb_trace_packing_allocates_more_than_random_before_the_first_refusal() -> None:
    """The published ordering (FGD, ATC'23) on the real trace: random placement strands GPUs early."""
    report = run_saturation(BUNDLED_OPENB_DIR, ["trainyard", "first-fit", "random"], seed=1)
    rows = {row["policy"]: row for row in report["policies"]}
    assert (report["pods"], report["gpus"]) == (8152, 6212)
    random = rows["random"]["allocation_ratio_at_first_refusal"]
    for policy in ("trainyard", "first-fit"):
        assert rows[policy]["allocation_ratio_at_first_refusal"] > random + 0.3, policy
        assert rows[policy]["unallocated_gpus"] < rows["random"]["unallocated_gpus"], policy
    # fragmentation-aware, trainyard refuses its first pod no earlier than first-fit (issue 36)
    trainyard, first_fit = rows["trainyard"], rows["first-fit"]
    assert trainyard["allocated_gpus_at_first_refusal"] >= first_fit["allocated_gpus_at_first_refusal"]


def test_every_refused_pod_is_listed_with_why(tmp_path: Path) -> None:
    nodes = ["node-0,32000,262144,8,G2\n", "node-1,32000,262144,8,G2\n"]
    pods = [
        "a,16000,8192,8,1000,,LS,Running,0,100,0\n",  # fills node-0's GPUs
        "b,8000,8192,4,1000,,LS,Running,1,100,1\n",  # node-1: 4 GPUs and 24 cores left
        "c,8000,8192,8,1000,,LS,Running,2,100,2\n",  # no node has 8 GPUs free
        "d,30000,8192,1,1000,,LS,Running,3,100,3\n",  # node-1 has the GPU free, not 30 cores
        "e,64000,8192,1,1000,,LS,Running,4,100,4\n",  # 64 cores: no node, even empty
    ]
    report = run_saturation(trace_dir(tmp_path, nodes, pods), ["first-fit"], seed=1)
    (row,) = report["policies"]
    refused = {pod["pod"]: pod for pod in row["refused_pods"]}
    assert list(refused) == ["c", "d", "e"]
    assert len(refused) == row["refused"]
    assert [refused[name]["kind"] for name in ("c", "d", "e")] == ["gpus", "cpu-memory", "never-fits"]
    assert "the most on one that could hold it: 4" in refused["c"]["reason"]
    assert "1 node(s) have 1 GPU(s) free, but none of them also has 30 cores" in refused["d"]["reason"]
    assert "no node holds 1 GPU(s), 64 cores, 8 GiB even empty" in refused["e"]["reason"]
    assert row["refusals"] == {"gpus": 1, "cpu-memory": 1, "never-fits": 1}


def test_sharing_mode_puts_several_shares_on_one_gpu(tmp_path: Path) -> None:
    """The 32 half-GPU pods fit on 16 GPUs when shared: demand is 112 GPUs of 128 and the
    packing policies refuse nothing; the shares are counted in thousandths."""
    report = run_saturation(fragmenting_trace(tmp_path), ["trainyard", "fgd", "first-fit", "random"], 1, "sharing")
    rows = {row["policy"]: row for row in report["policies"]}
    assert report["gpu_mode"] == "sharing"
    assert "shared" in report["fractional_gpus"]
    for policy in ("trainyard", "fgd", "first-fit"):
        assert rows[policy]["first_refusal"] is None, policy
        assert rows[policy]["arrived_gpu_demand"] == 112
        assert rows[policy]["allocated_gpus"] == 112
        assert rows[policy]["unallocated_gpus"] == 16
    assert rows["random"]["refused"] > 0


def test_the_fragmentation_rate_is_reported_along_the_arrival_of_demand(tmp_path: Path) -> None:
    report = run_saturation(fragmenting_trace(tmp_path), ["first-fit", "random"], seed=1)
    rows = {row["policy"]: row for row in report["policies"]}
    for row in rows.values():
        rates = [rate for _, rate in row["fragmentation_curve"]]
        assert len(rates) == len(row["curve"])
        assert all(0.0 <= rate <= 1.0 for rate in rates)
    # random leaves every free GPU where no 8-GPU pod fits; first-fit leaves none free at all
    assert rows["random"]["fragmentation_curve"][-1][1] > 0.1
    assert rows["first-fit"]["fragmentation_curve"][-1][1] == 0.0
    curve = rows["random"]["fragmentation_curve"]
    assert rate_at(curve, 0.9) == next(rate for arrived, rate in curve if arrived >= 0.9)
    assert rate_at(curve, 5.0) == curve[-1][1]
    assert rate_at([], 0.9) is None


def test_the_paper_table_sets_fgd_beside_the_papers_figures_for_the_full_trace_in_sharing_mode() -> None:
    row = {"policy": "fgd", "allocation_ratio": 0.93}
    full = {"gpu_mode": "sharing", "gpus": 6212, "policies": [row, {"policy": "first-fit", "allocation_ratio": 0.9}]}
    (fgd,) = paper_rows(full)
    assert fgd["paper_at_same_demand"] == pytest.approx(0.952, abs=0.001)
    assert fgd["difference"] == pytest.approx(0.93 - fgd["paper_at_same_demand"])
    assert "creation order" in fgd["why"]
    assert paper_rows({**full, "gpu_mode": "whole"}) == []


def test_cli_saturation_gpu_sharing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = fragmenting_trace(tmp_path)
    args = ["simulate", "--trace", str(root), "--mode", "saturation", "--gpu-sharing", "--compare", "fgd", "--json"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gpu_mode"] == "sharing"
    assert (tmp_path / "out" / "saturation.png").stat().st_size > 10_000
