"""`trainyard kwok export`: what a real KWOK cluster gets is what the simulator queued."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from scheduler.trainjob import workload_for_trainjob
from simulations.cluster_spec import ClusterSpec, QueueSpec, TeamSpec
from simulations.engine_driver import workload_document
from simulations.kwok import POD_COMPLETE_DELAY_ANNOTATION, POD_COMPLETE_JITTER_ANNOTATION
from simulations.kwok.export import export, simulated_runtime, trainjob_document
from simulations.scenarios import Scenario, build
from simulations.workloads import JobSpec, SyntheticWorkload
from trainyard.cli.main import main

SMALL = Scenario(
    name="kwok-small",
    cluster=ClusterSpec(zones=1, spines_per_zone=1, blocks_per_spine=2, nodes_per_block=4),
    queues=QueueSpec(teams=(TeamSpec("team-a", 0.5), TeamSpec("team-b", 0.5))),
    workload=SyntheticWorkload(jobs=12, mix="kalos"),
)

JOBS = [
    pytest.param(JobSpec("plain", "team-a", 0.0, 2, 8, 90.5, cpu_milli=4000, memory_mib=8192), id="plain-gang"),
    pytest.param(
        JobSpec("tas", "team-b", 5.0, 4, 8, 30.0, "high", 2000, 1024, "required", "kueue.x-k8s.io/block", ("H100",)),
        id="required-block-h100-high-priority",
    ),
]


@pytest.mark.parametrize("job", JOBS)
def test_exported_trainjob_renders_to_the_pod_set_the_simulator_queues(job: JobSpec) -> None:
    # The same path Kueue takes on the cluster: TrainJob + runtime -> JobSet -> Workload pod sets.
    trainjob = TrainJob.model_validate(trainjob_document(job))
    runtime = ClusterTrainingRuntime.model_validate(simulated_runtime())
    workload = workload_for_trainjob(trainjob, runtime).to_dict()
    simulated = workload_document(job)
    assert workload["spec"]["queueName"] == simulated["spec"]["queueName"]
    (pod_set,) = workload["spec"]["podSets"]
    (simulated_pod_set,) = simulated["spec"]["podSets"]
    assert pod_set["count"] == job.nodes
    (container,) = pod_set["template"]["spec"]["containers"]
    assert container["resources"] == simulated_pod_set["template"]["spec"]["containers"][0]["resources"]
    annotations = pod_set["template"]["metadata"]["annotations"]
    delay = f"{round(job.duration * 1000)}ms"
    assert annotations[POD_COMPLETE_DELAY_ANNOTATION] == annotations[POD_COMPLETE_JITTER_ANNOTATION] == delay
    for key, value in simulated_pod_set["template"]["metadata"]["annotations"].items():
        assert annotations[key] == value
    assert pod_set["template"]["spec"].get("affinity") == simulated_pod_set["template"]["spec"].get("affinity")
    labels = trainjob.metadata.labels
    assert labels.get("kueue.x-k8s.io/priority-class") == job.priority_class
    assert trainjob.spec.suspend is True


def test_export_writes_every_file_a_kwok_cluster_needs(tmp_path: Path) -> None:
    counts = export(build(SMALL), tmp_path)
    assert counts["10-nodes.yaml"] == 8
    assert counts["25-runtime.yaml"] == 1
    assert counts["40-trainjobs.yaml"] == 12
    trainjobs = list(yaml.safe_load_all((tmp_path / "40-trainjobs.yaml").read_text()))
    assert {doc["kind"] for doc in trainjobs} == {"TrainJob"}
    schedule = (tmp_path / "schedule.csv").read_text().splitlines()
    assert schedule[0] == "name,namespace,submit_time"
    assert [line.split(",")[0] for line in schedule[1:]] == [doc["metadata"]["name"] for doc in trainjobs]
    stages = list(yaml.safe_load_all((tmp_path / "20-stages.yaml").read_text()))
    assert {s["metadata"]["name"] for s in stages} >= {"pod-ready", "pod-complete", "pod-delete"}
    kueue_kinds = {doc["kind"] for doc in yaml.safe_load_all((tmp_path / "30-kueue.yaml").read_text())}
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Topology"} <= kueue_kinds


def test_cli_kwok_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: cli\ncluster: {spinesPerZone: 1, blocksPerSpine: 1, nodesPerBlock: 8}\nworkload: {jobs: 5}\n"
    )
    assert main(["kwok", "export", "--scenario", str(scenario), "--out", str(tmp_path / "kwok")]) == 0
    assert (tmp_path / "kwok" / "10-nodes.yaml").read_text().count("kwok.x-k8s.io/node: fake") == 8
    assert (tmp_path / "kwok" / "40-trainjobs.yaml").read_text().count("kind: TrainJob") == 5
