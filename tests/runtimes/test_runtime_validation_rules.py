"""Bad TrainJobs and runtimes are refused with an error that names the field and the fix."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from runtimes.errors import RenderError
from runtimes.loading import LoadError, load_trainjob
from runtimes.render import render_trainjob
from runtimes.validation import validate_runtime, validate_trainjob
from tests.builders import trainjob
from trainyard.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
TORCH_RUNTIME = yaml.safe_load((ROOT / "manifests/runtimes/torch_distributed.yaml").read_text())
MPI_RUNTIME = yaml.safe_load((ROOT / "manifests/runtimes/deepspeed_distributed.yaml").read_text())


def two_node_job(**trainer: Any) -> dict[str, Any]:
    """A valid torch TrainJob on two nodes; keyword arguments replace fields of spec.trainer."""
    return trainjob("job", "ns", nodes=2, trainer=trainer)


def errors_of(job: dict[str, Any], runtime: dict[str, Any] | None = TORCH_RUNTIME) -> dict[str, str]:
    found = validate_trainjob(
        TrainJob.model_validate(job),
        ClusterTrainingRuntime.model_validate(runtime) if runtime is not None else None,
    )
    return {error.path: error.message for error in found}


def test_a_valid_job_has_no_errors() -> None:
    assert errors_of(two_node_job()) == {}


def with_patch_container(name: str, env: bool = False) -> dict[str, Any]:
    job = two_node_job()
    container: dict[str, Any] = {"name": name, "volumeMounts": [{"name": "d", "mountPath": "/d"}]}
    if env:
        container["env"] = [{"name": "A", "value": "1"}]
    job["spec"]["runtimePatches"] = [
        {
            "manager": "example.com/team",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [container]}}}}}
                        ]
                    }
                }
            },
        }
    ]
    return job


PATCH_CONTAINER = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0]"

CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, str, str]] = [
    ("missing-runtime", two_node_job(), None, "spec.runtimeRef", "'torch-distributed' does not exist"),
    (
        "reserved-pet-env",
        two_node_job(env=[{"name": "PET_NNODES", "value": "9"}]),
        TORCH_RUNTIME,
        "spec.trainer.env",
        "PET_NNODES",
    ),
    (
        "num-nodes-zero",
        two_node_job(numNodes=0),
        TORCH_RUNTIME,
        "spec.trainer.numNodes",
        "0 is not accepted: must be at least 1",
    ),
    (
        "num-proc-word",
        two_node_job(numProcPerNode="many"),
        TORCH_RUNTIME,
        "spec.trainer.numProcPerNode",
        "'many' is not accepted",
    ),
    (
        "num-proc-zero",
        two_node_job(numProcPerNode=0),
        TORCH_RUNTIME,
        "spec.trainer.numProcPerNode",
        "must be at least 1",
    ),
    (
        "unknown-patch-container",
        with_patch_container("sidecar"),
        TORCH_RUNTIME,
        f"{PATCH_CONTAINER}.name",
        "container 'sidecar' does not exist",
    ),
    (
        "env-on-node-container",
        with_patch_container("node", env=True),
        TORCH_RUNTIME,
        f"{PATCH_CONTAINER}.env",
        "spec.trainer.env",
    ),
    (
        "mpi-word-num-proc",
        trainjob("job", "ns", runtime="deepspeed-distributed", nodes=None, trainer={"numProcPerNode": "auto"}),
        MPI_RUNTIME,
        "spec.trainer.numProcPerNode",
        "integer",
    ),
    (
        "ompi-env",
        trainjob(
            "job",
            "ns",
            runtime="deepspeed-distributed",
            nodes=None,
            trainer={"env": [{"name": "OMPI_MCA_plm_rsh_args", "value": "x"}]},
        ),
        MPI_RUNTIME,
        "spec.trainer.env",
        "OMPI_MCA_plm_rsh_args",
    ),
    ("bad-name", {**two_node_job(), "metadata": {"name": "Bad_Name"}}, TORCH_RUNTIME, "metadata.name", "DNS label"),
    (
        "dataset-without-initializer-job",
        trainjob("job", "ns", nodes=2, initializer={"dataset": {"storageUri": "hf://a/b"}}),
        TORCH_RUNTIME,
        "spec.initializer.dataset",
        "no dataset-initializer replicated job",
    ),
    (
        "storage-uri-without-scheme",
        trainjob("job", "ns", nodes=2, initializer={"model": {"storageUri": "models/x"}}),
        TORCH_RUNTIME,
        "spec.initializer.model.storageUri",
        "scheme",
    ),
]


@pytest.mark.parametrize(("case", "job", "runtime", "path", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_trainjob_names_the_field(
    case: str, job: dict[str, Any], runtime: dict[str, Any] | None, path: str, message: str
) -> None:
    errors = errors_of(job, runtime)
    assert path in errors, errors
    assert message in errors[path]


def test_render_refuses_an_invalid_trainjob() -> None:
    with pytest.raises(RenderError) as raised:
        render_trainjob(
            TrainJob.model_validate(two_node_job(numNodes=0)), ClusterTrainingRuntime.model_validate(TORCH_RUNTIME)
        )
    assert "spec.trainer.numNodes" in str(raised.value)


def runtime_with(mutate: Any) -> dict[str, str]:
    runtime = copy.deepcopy(TORCH_RUNTIME)
    mutate(runtime)
    return {e.path: e.message for e in validate_runtime(ClusterTrainingRuntime.model_validate(runtime))}


def _node_job(runtime: dict[str, Any]) -> dict[str, Any]:
    job: dict[str, Any] = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    return job


JOB0 = "spec.template.spec.replicatedJobs[0]"


def test_builtin_runtimes_are_valid() -> None:
    for path in sorted((ROOT / "manifests/runtimes").glob("*.yaml")):
        runtime = ClusterTrainingRuntime.model_validate(yaml.safe_load(path.read_text()))
        assert validate_runtime(runtime) == [], path


def test_runtime_rules() -> None:
    assert "always must be 1" in runtime_with(lambda r: _node_job(r).update(replicas=2))[f"{JOB0}.replicas"]
    renamed = runtime_with(
        lambda r: _node_job(r)["template"]["spec"]["template"]["spec"]["containers"][0].update(name="main")
    )
    assert "required container 'node'" in renamed[f"{JOB0}.template.spec.template.spec.containers"]
    on_failure = runtime_with(
        lambda r: _node_job(r)["template"]["spec"]["template"]["spec"].update(restartPolicy="OnFailure")
    )
    assert "requires Never" in on_failure[f"{JOB0}.template.spec.template.spec.restartPolicy"]
    bad_action = runtime_with(
        lambda r: r["spec"]["template"]["spec"]["failurePolicy"]["rules"][0].update(action="Explode")
    )
    assert "FailJobSet" in bad_action["spec.template.spec.failurePolicy.rules[0].action"]
    two_policies = runtime_with(lambda r: r["spec"]["mlPolicy"].update(mpi={}))
    assert "only one ML policy" in two_policies["spec.mlPolicy"]
    no_dns = runtime_with(lambda r: r["spec"]["template"]["spec"].update(network={"enableDNSHostnames": False}))
    assert "DNS" in no_dns["spec.template.spec.network.enableDNSHostnames"]


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nspec:\n  trainer: [unclosed\n")
    with pytest.raises(LoadError, match=r"job\.yaml:\d+:\d+: invalid YAML"):
        load_trainjob(path)


def test_wrongly_typed_field_names_file_object_and_field(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(two_node_job(numNodes="two")))
    with pytest.raises(LoadError) as raised:
        load_trainjob(path)
    # the webhook's words, at the line of the field (runtimes.loading checks as scheduler.api.checks does)
    assert 'job.yaml:10: TrainJob "ns/job" is invalid: spec.trainer.numNodes' in str(raised.value)
    assert "'two'" in str(raised.value)


def test_cli_render_reports_errors_without_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(two_node_job(env=[{"name": "PET_MASTER_ADDR", "value": "x"}])))
    assert main(["render", str(path)]) == 2
    err = capsys.readouterr().err
    assert "spec.trainer.env" in err
    assert "PET_MASTER_ADDR" in err
    assert "Traceback" not in err
    missing = tmp_path / "missing.yaml"
    missing.write_text(yaml.safe_dump({**two_node_job(), "spec": {"runtimeRef": {"name": "nope"}}}))
    assert main(["render", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "spec.runtimeRef" in err
    assert "'nope' not found" in err
    assert "torch-distributed" in err
