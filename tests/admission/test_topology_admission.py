"""Admission with gang placement: quota and a topology placement must both fit."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from runtimes.k8s.core import Taint
from scheduler.api.kueue import Workload
from scheduler.api.loading import load_kueue_objects
from scheduler.engine import AdmissionEngine

SAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "samples" / "kueue-tas"
BLOCK = "network.topology.nvidia.com/block"


@pytest.fixture
def loaded() -> tuple[AdmissionEngine, dict[str, Workload]]:
    objects = load_kueue_objects([SAMPLE])
    engine = AdmissionEngine()
    for obj in objects.objects:
        engine.apply(obj)
    return engine, {w.metadata.name: w for w in objects.workloads}


def gang(template: Workload, name: str, count: int, priority: int = 0) -> Workload:
    workload = copy.deepcopy(template)
    workload.metadata.name = name
    workload.metadata.creation_timestamp = None
    workload.spec.pod_sets[0].count = count
    workload.spec.priority = priority
    return workload


def test_gangs_are_admitted_with_placements_and_the_impossible_one_says_why(loaded) -> None:
    engine, workloads = loaded
    for workload in workloads.values():
        engine.submit(workload, now=0)
    result = engine.schedule(now=1)
    admitted = {a.key: a for a in result.admitted}
    assert set(admitted) == {"ml/allreduce-4x8", "ml/moe-6x8", "ml/sweep-3x4"}
    block_gang = admitted["ml/allreduce-4x8"].placement["h100-tas"].pod_set("node")
    assert block_gang.level == BLOCK
    assert len(set(block_gang.nodes)) == 4
    assert len({n.rsplit("-h", 1)[0] for n in block_gang.nodes}) == 1, "required block: one block only"
    reason = result.pending["ml/too-wide-block"]
    assert "largest block has room for 4 pods" in reason
    assert "TopologyPlacementFailed" in reason


def test_never_fits_reason_uses_the_topology_on_an_empty_cluster(loaded) -> None:
    engine, workloads = loaded
    assert engine.never_fits_reason(workloads["allreduce-4x8"]) is None
    reason = engine.never_fits_reason(workloads["too-wide-block"])
    assert reason is not None
    assert "needs 5 pods × 8 nvidia.com/gpu in one network.topology.nvidia.com/block" in reason


def test_a_node_not_ready_for_now_still_counts_for_ever_fitting(loaded) -> None:
    """A node that registered a moment ago (or went NotReady, or is cordoned) carries the node
    lifecycle controller's taints: the gang waits for it, but is not refused as never fitting."""
    engine, workloads = loaded
    nodes = [obj for obj in load_kueue_objects([SAMPLE]).objects if obj.kind == "Node"]
    for node in nodes:
        node.status.conditions = [c for c in node.status.conditions if c.type != "Ready"]
        node.spec.unschedulable = True
        node.spec.taints = [Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule")]
        engine.apply(node)
    workload = workloads["allreduce-4x8"]
    assert engine.never_fits_reason(workload) is None
    engine.submit(workload, now=0)
    assert engine.schedule(now=1).admitted == []  # no node can take a pod now


def test_finishing_a_gang_gives_its_nodes_back(loaded) -> None:
    engine, workloads = loaded
    template = workloads["allreduce-4x8"]
    for index in range(4):  # four blocks of four 8-GPU hosts: exactly four block gangs fit
        engine.submit(gang(template, f"block-{index}", 4), now=index)
    assert len(engine.schedule(now=10).admitted) == 4
    engine.submit(gang(template, "late", 4), now=11)
    assert engine.schedule(now=12).admitted == []
    engine.finish("ml/block-2", now=13)
    result = engine.schedule(now=14)
    assert [a.key for a in result.admitted] == ["ml/late"]
    late_nodes = set(result.admitted[0].placement["h100-tas"].pod_set("node").nodes)
    freed = engine.workloads["ml/block-2"]
    assert freed.admission is None
    assert len(late_nodes) == 4


def test_preemption_frees_a_whole_block_for_a_higher_priority_gang(loaded) -> None:
    engine, workloads = loaded
    template = workloads["allreduce-4x8"]
    # Fill every host with a one-host low-priority job (16 hosts × 8 GPUs = quota 128).
    for index in range(16):
        engine.submit(gang(template, f"small-{index:02}", 1), now=index)
    assert len(engine.schedule(now=20).admitted) == 16
    engine.submit(gang(template, "urgent", 4, priority=100), now=21)
    result = engine.schedule(now=22)
    assert [a.key for a in result.admitted] == ["ml/urgent"]
    victims = {p.key for p in result.preempted}
    assert len(victims) == 4, "a minimal set: exactly the four hosts of one block"
    assert all(p.reason == "InClusterQueue" for p in result.preempted)
    nodes = result.admitted[0].placement["h100-tas"].pod_set("node").nodes
    assert len({n.rsplit("-h", 1)[0] for n in nodes}) == 1
