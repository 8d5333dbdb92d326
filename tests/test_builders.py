"""The fluent builders build what a user would write: ``obj()`` reads ``doc()`` and writes it back unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from builders import (
    ClusterQueueBuilder,
    CohortBuilder,
    LocalQueueBuilder,
    NodeBuilder,
    ResourceFlavorBuilder,
    TopologyBuilder,
    WorkloadBuilder,
)

from runtimes.k8s.meta import Resource

BLOCK = "cloud.example.com/block"

BUILDERS: list[Any] = [
    pytest.param(
        ClusterQueueBuilder("team-a").cohort("research").quota("a100", "cpu", 32).quota("a100", "nvidia.com/gpu", 8),
        id="cluster-queue",
    ),
    pytest.param(CohortBuilder("org").parent("company").quota("a100", "nvidia.com/gpu", 16), id="cohort"),
    pytest.param(LocalQueueBuilder("main", "team-a").cluster_queue("team-a"), id="local-queue"),
    pytest.param(ResourceFlavorBuilder("a100").node_labels(pool="a100").taint("gpu").topology("dc"), id="flavor"),
    pytest.param(TopologyBuilder("dc", BLOCK, "kubernetes.io/hostname"), id="topology"),
    pytest.param(WorkloadBuilder("train", "team-a").queue("main").pod_set(count=4, cpu="1"), id="workload"),
    pytest.param(NodeBuilder("n1").labels(**{BLOCK: "b1"}).capacity(cpu="32").ready(), id="node"),
]


@pytest.mark.parametrize("builder", BUILDERS)
def test_the_model_round_trips_the_document(builder: Any) -> None:
    model = builder.obj()
    assert isinstance(model, Resource)
    assert model.to_dict() == builder.doc()


def test_raw_spec_fields_override_what_the_calls_set() -> None:
    doc = ClusterQueueBuilder("cq").quota("f", "cpu", 4).spec(queueingStrategy="Random", resourceGroups=[]).doc()
    assert doc["spec"]["queueingStrategy"] == "Random"
    assert doc["spec"]["resourceGroups"] == []


def test_a_node_reads_as_the_scheduler_reads_it() -> None:
    node = NodeBuilder("n2").capacity(cpu="8", nvidia_com_gpu="4").taint("maintenance").ready(False).obj()
    assert not node.ready
    assert not node.schedulable
    assert node.status.allocatable["nvidia.com/gpu"].value == 4
    assert [t.key for t in node.spec.taints] == ["maintenance"]
    assert NodeBuilder("n3").obj().ready  # no Ready condition at all counts as Ready
    assert not NodeBuilder("n4").unschedulable().obj().schedulable
