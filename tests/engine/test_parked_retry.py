"""Parked workloads are retried when the capacity they wait for is released.

BestEffortFIFO parks a workload's shape until capacity changes under its cohort tree. Quota
is per cohort tree, but a TAS flavor's nodes are shared by every ClusterQueue that lists the
flavor, cohort or not: a gang parked on a topology placement failure must be retried when a
gang of another ClusterQueue gives those nodes back.
"""

from __future__ import annotations

import copy
from pathlib import Path

from scheduler.api.kueue import ClusterQueue, LocalQueue, Workload
from scheduler.api.loading import load_kueue_objects
from scheduler.engine import AdmissionEngine, WorkloadState
from tests.builders import local_queue

SAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "samples" / "kueue-tas"


def _second_cluster_queue(first: ClusterQueue) -> tuple[ClusterQueue, LocalQueue]:
    """A ClusterQueue without cohort sharing the same TAS flavor (and so the same nodes)."""
    data = first.to_dict()
    data["metadata"] = {"name": "inference"}
    queue = local_queue("inference", "ml", "inference")
    return ClusterQueue.model_validate(data), queue


def _gang(template: Workload, name: str, hosts: int, queue: str) -> Workload:
    workload = copy.deepcopy(template)
    workload.metadata.name = name
    workload.metadata.creation_timestamp = None
    workload.spec.pod_sets[0].count = hosts
    workload.spec.queue_name = queue
    return workload


def test_topology_parked_gang_in_another_cluster_queue_is_retried_when_nodes_free() -> None:
    objects = load_kueue_objects([SAMPLE])
    engine = AdmissionEngine()
    for obj in objects.objects:
        engine.apply(obj)
    training = next(o for o in objects.objects if isinstance(o, ClusterQueue))
    for obj in _second_cluster_queue(training):
        engine.apply(obj)
    template = next(w for w in objects.workloads if w.metadata.name == "allreduce-4x8")
    for index in range(4):  # four blocks of four 8-GPU hosts: the training gangs take every node
        engine.submit(_gang(template, f"block-{index}", 4, "default"), now=index)
    assert len(engine.schedule(now=10).admitted) == 4
    waiting = engine.submit(_gang(template, "serving", 4, "inference"), now=11)
    result = engine.schedule(now=12)
    assert not result.admitted
    assert "TopologyPlacementFailed" not in result.pending[waiting], "it fits on an empty cluster"
    engine.finish("ml/block-1", now=13)
    assert [a.key for a in engine.schedule(now=14).admitted] == [waiting]
    assert engine.workloads[waiting].state is WorkloadState.ADMITTED
