"""A failed node under an admitted gang: its pods move within the required domain, or the gang
is evicted with NodeFailures when the domain has no room (Kueue's TASFailedNodeReplacement)."""

from __future__ import annotations

import copy
from pathlib import Path

from runtimes.k8s.core import Node
from scheduler.api.kueue import Workload
from scheduler.api.loading import load_kueue_objects
from scheduler.engine import AdmissionEngine, WorkloadState
from scheduler.engine.node_failures import ReplacedPlacement
from scheduler.engine.results import EvictedWorkload

SAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "samples" / "kueue-tas"
BLOCK = "network.topology.nvidia.com/block"


def _setup() -> tuple[AdmissionEngine, Workload, dict[str, Node]]:
    objects = load_kueue_objects([SAMPLE])
    engine = AdmissionEngine()
    for obj in objects.objects:
        engine.apply(obj)
    nodes = {o.name: o for o in objects.objects if isinstance(o, Node)}
    template = next(w for w in objects.workloads if w.metadata.name == "allreduce-4x8")
    return engine, template, nodes


def _gang(template: Workload, name: str, hosts: int) -> Workload:
    workload = copy.deepcopy(template)
    workload.metadata.name = name
    workload.metadata.creation_timestamp = None
    workload.spec.pod_sets[0].count = hosts
    workload.spec.queue_name = "default"
    return workload


def _not_ready(node: Node) -> Node:
    data = node.to_dict()
    data.setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "False"}]
    return Node.model_validate(data)


def _nodes(engine: AdmissionEngine, key: str) -> list[str]:
    admission = engine.workloads[key].admission
    assert admission is not None
    return [n for placement in admission.placements.values() for ps in placement.pod_sets for n in ps.nodes]


def test_the_failed_nodes_pods_move_within_the_block_and_the_others_stay() -> None:
    engine, template, nodes = _setup()
    key = engine.submit(_gang(template, "a", 2), now=0)
    assert [a.key for a in engine.schedule(now=1).admitted] == [key]
    before = _nodes(engine, key)
    failed = before[0]
    engine.apply(_not_ready(nodes[failed]))
    outcomes = engine.node_failed(failed, now=2)
    assert len(outcomes) == 1
    replaced = outcomes[0]
    assert isinstance(replaced, ReplacedPlacement)
    after = _nodes(engine, key)
    assert failed not in after
    assert after[1:] == before[1:]  # only the failed node's pod moved
    blocks = {nodes[n].metadata.labels[BLOCK] for n in after}
    assert blocks == {nodes[failed].metadata.labels[BLOCK]}  # required block kept
    assert engine.workloads[key].state is WorkloadState.ADMITTED
    # the moved pod's node is held: a gang needing the whole block no longer fits there
    assert engine.node_failed("no-such-node", now=3) == []


def test_without_room_in_the_block_the_gang_is_evicted_with_node_failures() -> None:
    engine, template, nodes = _setup()
    keys = [engine.submit(_gang(template, f"block-{i}", 4), now=i) for i in range(4)]
    assert len(engine.schedule(now=10).admitted) == 4  # every node of every block is taken
    cq_name = engine.workloads[keys[0]].cluster_queue or ""
    used_before = sum(engine.model.cluster_queues[cq_name].node.usage.values())
    failed = _nodes(engine, keys[0])[0]
    engine.apply(_not_ready(nodes[failed]))
    outcomes = engine.node_failed(failed, now=11)
    assert len(outcomes) == 1
    evicted = outcomes[0]
    assert isinstance(evicted, EvictedWorkload)
    assert evicted.key == keys[0]
    assert evicted.reason == "NodeFailures"
    assert engine.workloads[keys[0]].state is not WorkloadState.ADMITTED
    used_after = sum(engine.model.cluster_queues[cq_name].node.usage.values())  # the model is rebuilt on changes
    assert used_after * 4 == used_before * 3  # its quota was released
