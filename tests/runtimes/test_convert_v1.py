"""Training Operator v1 PyTorchJob / TFJob → TrainJob (+ TrainingRuntime), and what is reported."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.api.trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from runtimes.convert import ConversionError, convert_v1_job
from runtimes.loading import find_runtime, load_builtin_runtimes
from runtimes.render import render_trainjob
from trainyard.cli.main import main


def pytorchjob(**pod_spec: Any) -> dict[str, Any]:
    def replica(count: int) -> dict[str, Any]:
        return {
            "replicas": count,
            "restartPolicy": "OnFailure",
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "pytorch",
                            "image": "mnist:1",
                            "command": ["python3", "mnist.py"],
                            "env": [{"name": "MASTER_PORT", "value": "1"}, {"name": "LR", "value": "0.1"}],
                            "resources": {"limits": {"nvidia.com/gpu": 1}},
                        }
                    ],
                    **pod_spec,
                }
            },
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "mnist", "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "nprocPerNode": "2",
            "runPolicy": {"activeDeadlineSeconds": 600, "cleanPodPolicy": "None"},
            "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(3)},
        },
    }


def _builtin_torch() -> ClusterTrainingRuntime | TrainingRuntime:
    runtime = find_runtime(load_builtin_runtimes(), "torch-distributed")
    assert runtime is not None
    return runtime


def test_simple_pytorchjob_uses_the_builtin_runtime_and_renders() -> None:
    conversion = convert_v1_job(pytorchjob(nodeSelector={"gpu": "a100"}))
    assert conversion.runtime is None
    spec = conversion.trainjob["spec"]
    assert spec["runtimeRef"] == {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"}
    assert spec["trainer"]["numNodes"] == 4
    assert spec["trainer"]["numProcPerNode"] == 2
    assert spec["trainer"]["env"] == [{"name": "LR", "value": "0.1"}]
    assert spec["activeDeadlineSeconds"] == 600
    assert conversion.trainjob["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "q"}
    patch = spec["runtimePatches"][0]
    assert patch["manager"] == "trainyard.io/convert"
    notes = "\n".join(conversion.unmapped)
    assert "MASTER_PORT dropped" in notes
    assert "runPolicy.cleanPodPolicy" in notes
    assert "restartPolicy OnFailure" in notes

    rendered = render_trainjob(TrainJob.model_validate(conversion.trainjob), _builtin_torch())
    node = rendered.jobset.spec.replicated_jobs[0]
    assert node.template.spec.parallelism == 4
    assert node.template.spec.template.spec.node_selector == {"gpu": "a100"}
    env = {e.name: e.value for e in node.template.spec.template.spec.containers[0].env or []}
    assert env["PET_NNODES"] == "4"
    assert env["PET_NPROC_PER_NODE"] == "2"
    assert env["LR"] == "0.1"


def test_sidecar_needs_a_generated_runtime() -> None:
    job = pytorchjob()
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        replica["template"]["spec"]["containers"].append({"name": "logger", "image": "fluentbit"})
    conversion = convert_v1_job(job)
    assert conversion.runtime is not None
    assert conversion.trainjob["spec"]["runtimeRef"] == {"name": "mnist-torch", "kind": "TrainingRuntime"}
    assert "more than one container" in conversion.unmapped[0]
    runtime = TrainingRuntime.model_validate(conversion.runtime)
    rendered = render_trainjob(TrainJob.model_validate(conversion.trainjob), runtime)
    containers = rendered.jobset.spec.replicated_jobs[0].template.spec.template.spec.containers
    assert [c.name for c in containers] == ["node", "logger"]


def test_master_and_worker_that_differ_are_reported() -> None:
    job = pytorchjob()
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "other:2"
    conversion = convert_v1_job(job)
    assert conversion.runtime is not None
    assert any("Master and Worker differ" in note for note in conversion.unmapped)


def test_tfjob_gets_a_runtime_with_tf_config() -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf"},
        "spec": {
            "tfReplicaSpecs": {
                "Chief": {
                    "replicas": 1,
                    "template": {
                        "spec": {"containers": [{"name": "tensorflow", "image": "tf", "command": ["python", "t.py"]}]}
                    },
                },
                "PS": {
                    "replicas": 2,
                    "template": {
                        "spec": {"containers": [{"name": "tensorflow", "image": "tf", "command": ["python", "t.py"]}]}
                    },
                },
                "Worker": {
                    "replicas": 3,
                    "template": {
                        "spec": {"containers": [{"name": "tensorflow", "image": "tf", "command": ["python", "t.py"]}]}
                    },
                },
            }
        },
    }
    conversion = convert_v1_job(job)
    assert conversion.runtime is not None
    runtime = TrainingRuntime.model_validate(conversion.runtime)
    rendered = render_trainjob(TrainJob.model_validate(conversion.trainjob), runtime)
    jobs = {j.name: j for j in rendered.jobset.spec.replicated_jobs}
    assert sorted(jobs) == ["chief", "node", "ps"]
    assert jobs["node"].template.spec.parallelism == 3
    assert jobs["ps"].template.spec.parallelism == 2
    assert rendered.jobset.spec.success_policy is not None
    assert rendered.jobset.spec.success_policy.target_replicated_jobs == ["chief"]
    container = jobs["node"].template.spec.template.spec.containers[0]
    cluster = json.loads(next(e.value for e in container.env or [] if e.name == "TF_CLUSTER_SPEC") or "")
    assert cluster == {
        "chief": ["tf-chief-0-0.tf:2222"],
        "ps": ["tf-ps-0-0.tf:2222", "tf-ps-0-1.tf:2222"],
        "worker": ["tf-node-0-0.tf:2222", "tf-node-0-1.tf:2222", "tf-node-0-2.tf:2222"],
    }
    assert container.command is not None
    assert container.command[-2:] == ["python", "t.py"]
    assert '\\"type\\":\\"worker\\"' in container.command[2]


def test_unconvertible_input_is_refused() -> None:
    with pytest.raises(ConversionError, match="MPIJob"):
        convert_v1_job({"kind": "MPIJob"})
    broken = copy.deepcopy(pytorchjob())
    broken["spec"]["pytorchReplicaSpecs"] = {}
    with pytest.raises(ConversionError, match="pytorchReplicaSpecs"):
        convert_v1_job(broken)


def test_cli_prints_yaml_and_reports_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(pytorchjob()))
    assert main(["convert", str(path)]) == 0
    out, err = capsys.readouterr()
    (trainjob,) = list(yaml.safe_load_all(out))
    assert trainjob["kind"] == "TrainJob"
    assert "PyTorchJob 'mnist': spec.pytorchReplicaSpecs.Master.template.spec.containers[pytorch].env" in err
    other = tmp_path / "other.yaml"
    other.write_text("kind: Deployment\n")
    assert main(["convert", str(other)]) == 2
    assert "no PyTorchJob or TFJob" in capsys.readouterr().err
