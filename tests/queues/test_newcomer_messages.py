"""What `queues` says to a newcomer (issue 32): one position convention, the right word for a job
borrowing can admit, the node size behind a pod no node can hold, every column at 80."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.api.kueue import Workload
from scheduler.engine import AdmissionEngine
from scheduler.queues import describe_workload, load_state
from tests.builders import (
    ClusterQueueBuilder,
    LocalQueueBuilder,
    NodeBuilder,
    ResourceFlavorBuilder,
    TopologyBuilder,
    WorkloadBuilder,
)
from tests.queues.support import FIXTURES
from trainyard.cli.main import main

HOSTNAME = "kubernetes.io/hostname"


def test_positions_are_counted_from_one_in_words_and_from_zero_in_data(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queues", "pending", "team-a", "--objects", str(FIXTURES)]) == 0
    table = capsys.readouterr().out
    assert "(1=next)" in table  # the header says which convention
    first = next(line for line in table.splitlines() if "team-a/a-first" in line)
    assert first.split()[0] == "1/1"
    assert main(["queues", "pending", "team-a", "--objects", str(FIXTURES), "-o", "json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    head = next(i for i in items if i["name"] == "a-first")
    assert (head["positionInClusterQueue"], head["positionInLocalQueue"]) == (0, 0)  # the visibility API's
    assert main(["queues", "describe", "team-a/a-first", "--objects", str(FIXTURES), "--no-estimate"]) == 0
    assert "position: 1 in the ClusterQueue, 1 in the LocalQueue" in capsys.readouterr().out


def _borrowing_cohort() -> list[Any]:
    """team-a (8 GPUs) and team-b (8 GPUs) share a cohort; team-b runs on its own 8."""
    queues = [
        ClusterQueueBuilder(team)
        .cohort("research")
        .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
        .quota("h100", "nvidia.com/gpu", 8)
        .obj()
        for team in ("team-a", "team-b")
    ]
    locals_ = [LocalQueueBuilder("main", team).cluster_queue(team).obj() for team in ("team-a", "team-b")]
    return [ResourceFlavorBuilder("h100").obj(), *queues, *locals_]


def test_a_job_borrowing_can_admit_later_is_not_called_unreachable() -> None:
    running = WorkloadBuilder("b-running", "team-b").queue("main").created(0).pod_set(nvidia_com_gpu="8")
    running = running.admitted("team-b", {"nvidia.com/gpu": "h100"})
    wide = WorkloadBuilder("a-wide", "team-a").queue("main").created(10).pod_set(count=2, nvidia_com_gpu="8")
    state = load_state(_borrowing_cohort(), [running.obj(), wide.obj()], now=100.0)
    story = describe_workload(state, "team-a/a-wide")
    assert story is not None
    assert story.explanation is not None
    words = story.explanation.preemption.words
    assert "exceeds what the queue can ever reach" not in words
    assert "fits what the queue can reach with borrowing" in words


def test_a_job_beyond_the_cohort_is_still_called_unreachable() -> None:
    wide = WorkloadBuilder("a-huge", "team-a").queue("main").pod_set(count=3, nvidia_com_gpu="8")
    state = load_state(_borrowing_cohort(), [wide.obj()], now=100.0)
    story = describe_workload(state, "team-a/a-huge")
    assert story is not None
    assert story.explanation is not None
    assert story.explanation.preemption.words == (
        "preemption cannot help: the request exceeds what the queue can ever reach"
    )


def test_a_pod_larger_than_every_node_is_refused_with_the_node_size() -> None:
    engine = AdmissionEngine()
    engine.apply(TopologyBuilder("fabric", "example.com/block", HOSTNAME).obj())
    engine.apply(ResourceFlavorBuilder("gpu-h100").node_labels(pool="h100").topology("fabric").obj())
    engine.apply(ClusterQueueBuilder("team-a").quota("gpu-h100", "nvidia.com/gpu", 64).obj())
    engine.apply(LocalQueueBuilder("main", "team-a").cluster_queue("team-a").obj())
    for index in range(4):
        node = NodeBuilder(f"gpu-{index}").labels(pool="h100", **{"example.com/block": "b0", HOSTNAME: f"gpu-{index}"})
        engine.apply(node.capacity(cpu="96", nvidia_com_gpu="8").obj())
    fat: Workload = WorkloadBuilder("fat", "team-a").queue("main").pod_set(count=2, nvidia_com_gpu="16").obj()
    assert engine.never_fits_reason(fat) == (
        "pod set 'main' asks 16 nvidia.com/gpu per pod, and the nodes of flavor gpu-h100 have 8 nvidia.com/gpu "
        "each: no node can hold one of its pods; ask for at most 8 nvidia.com/gpu per pod (more nodes, each with "
        "fewer)"
    )
    fits: Workload = WorkloadBuilder("fits", "team-a").queue("main").pod_set(count=4, nvidia_com_gpu="8").obj()
    assert engine.never_fits_reason(fits) is None


def _wide_queues(folder: Path) -> Path:
    """Long names and big numbers: a row of the wide table runs past 80 columns."""
    documents: list[dict[str, Any]] = [ResourceFlavorBuilder("gpu-h100").doc()]
    for team in ("team-a", "research-llm-pretraining"):
        queue = ClusterQueueBuilder(team).cohort("gpu-cluster")
        queue.quota("gpu-h100", "cpu", 10240, borrowing_limit=2048, lending_limit=1024)
        queue.quota("gpu-h100", "nvidia.com/gpu", 512, borrowing_limit=1024, lending_limit=256)
        documents += [queue.doc(), LocalQueueBuilder("main", team).cluster_queue(team).doc()]
    stamp = time.time() - 1000
    for index in range(90):
        job = WorkloadBuilder(f"job-{index}", "team-a").queue("main").pod_set(count=2, nvidia_com_gpu="8", cpu="64")
        document = job.doc()
        document["metadata"]["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp + index))
        documents.append(document)
    (folder / "queues.yaml").write_text(yaml.safe_dump_all(documents))
    return folder


def test_the_list_keeps_every_column_whole_at_80(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["queues", "list", "--objects", str(_wide_queues(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    header = next(line for line in out.splitlines() if "Adm/Pend" in line)
    for column in ("ClusterQueue", "Adm/Pend", "Flavor/resource", "Used/nom", "Borrowed", "Lent"):
        assert column in header
    team_a = next(line for line in out.splitlines() if line.lstrip().startswith("team-a"))
    assert "48/42" in team_a  # admitted/pending, never cropped
    assert "…" not in out
