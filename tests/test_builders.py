"""The builders build what a user would write: the models read each document and write it back unchanged,
and the documents the builders make by default pass the rules the webhook enforces."""

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
    cluster_training_runtime,
    jobset,
    kwok_trainjob,
    namespace,
    node,
    replicated_job,
    training_runtime,
    trainjob,
)

from runtimes.api.jobset import JobSet
from runtimes.api.trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.checks import check_object
from simulations.kwok import POD_COMPLETE_DELAY_ANNOTATION, POD_COMPLETE_JITTER_ANNOTATION

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
    pytest.param(
        WorkloadBuilder("gang").spec(maximumExecutionTimeSeconds=60).pod_set(count=2, required_topology=BLOCK, cpu="8"),
        id="workload-tas",
    ),
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


GPU_JOB = trainjob(
    "llm",
    "team-a",
    nodes=4,
    requests={"cpu": "8", "nvidia.com/gpu": "8"},
    limits={"nvidia.com/gpu": "8"},
    queue="main",
    priority_class="high",
    annotations={"example.com/owner": "team-a"},
    pod_annotations={"pod-complete.stage.kwok.x-k8s.io/delay": "1s"},
    suspend=True,
)
NODE_JOB = replicated_job("node", parallelism=2, cpu="2")

DOCUMENTS: list[Any] = [
    pytest.param(trainjob(), TrainJob, id="trainjob-default"),
    pytest.param(GPU_JOB, TrainJob, id="trainjob-gpus"),
    pytest.param(kwok_trainjob("sim", nodes=3, gpus=4, run="1h"), TrainJob, id="trainjob-kwok"),
    pytest.param(trainjob(nodes=None, runtime="mnist", runtime_kind="TrainingRuntime"), TrainJob, id="trainjob-bare"),
    pytest.param(cluster_training_runtime(replicated_jobs=[NODE_JOB]), ClusterTrainingRuntime, id="cluster-runtime"),
    pytest.param(training_runtime("mnist", "team-a", replicated_jobs=[NODE_JOB]), TrainingRuntime, id="runtime"),
    pytest.param(jobset("llm", "team-a", NODE_JOB, labels={"app": "x"}), JobSet, id="jobset"),
    pytest.param(node("n1", hostname=True, cpu="8", nvidia_com_gpu="8", taints=[{"key": "gpu"}]), Node, id="node"),
    pytest.param(namespace("team-a", team="a"), Resource, id="namespace"),
]


@pytest.mark.parametrize(("document", "model"), DOCUMENTS)
def test_the_documents_round_trip_and_pass_the_rules(document: dict[str, Any], model: type[Resource]) -> None:
    assert model.model_validate(document).to_dict() == document
    check = check_object(document)
    assert (check.errors, check.unknown) == ([], [])


def test_the_trainjob_keywords_land_where_trainer_reads_them() -> None:
    assert GPU_JOB["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "main",
        "kueue.x-k8s.io/priority-class": "high",
    }
    trainer = GPU_JOB["spec"]["trainer"]
    assert trainer == {
        "numNodes": 4,
        "resourcesPerNode": {"requests": {"cpu": "8", "nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
    }
    assert GPU_JOB["spec"]["podTemplateOverrides"][0]["targetJobs"] == [{"name": "node"}]
    assert GPU_JOB["spec"]["suspend"] is True
    # a field the rules refuse still builds, so a test can show the refusal
    refused = check_object(trainjob(trainer={"numNodes": 0}))
    assert [error.path for error in refused.errors] == ["spec.trainer.numNodes"]


def test_node_in_one_call_reads_as_the_builder() -> None:
    built = Node.model_validate(node("n5", labels={"pool": "a"}, ready=False, unschedulable=True, cpu="4"))
    assert built.metadata.labels == {"pool": "a"}
    assert not built.ready
    assert not built.schedulable
    assert "status" not in node("n6", ready=None)


def test_a_kwok_trainjob_carries_the_annotations_the_kwok_stages_read() -> None:
    (override,) = kwok_trainjob("sim", run="90s")["spec"]["podTemplateOverrides"]
    assert override["metadata"]["annotations"] == {
        POD_COMPLETE_DELAY_ANNOTATION: "90s",
        POD_COMPLETE_JITTER_ANNOTATION: "90s",
    }
