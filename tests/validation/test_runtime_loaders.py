"""The runtimes layer's own loaders refuse what the webhook refuses, in the webhook's words.

``runtimes.loading`` (used by ``python -m runtimes.local``, the SDK's local backend and the
built-in runtimes) cannot import ``scheduler``; it checks Trainer objects with the same rules
(``runtimes.validation``, ``runtimes.runtime_validation``, ``runtimes.k8s.fields``) and words
refusals with the same functions (``runtimes.messages``) as ``scheduler.api.checks``. Each case
here is refused by the loader with exactly the message ``trainyard render`` prints.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtimes.loading import LoadError, load_runtimes, load_trainjob
from runtimes.local.errors import LocalRunError
from runtimes.local.run import find_runtime, load_trainjob_file, plan_trainjob
from runtimes.sdk import LocalBackendConfig, TrainerClient
from trainyard.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

TRAINJOB = """\
apiVersion: {api_version}
kind: TrainJob
metadata:
  name: job
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: {num_nodes}
    {proc_field}: 1
"""

RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: broken
spec:
  mlPolicy:
    numNodes: {num_nodes}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers: [{{name: node, image: busybox}}]
"""


def trainjob_yaml(
    api_version: str = "trainer.kubeflow.org/v1alpha1", num_nodes: str = "1", proc: str = "numProcPerNode"
) -> str:
    return TRAINJOB.format(api_version=api_version, num_nodes=num_nodes, proc_field=proc)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def render_message(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["render", str(path)]) == 2
    return capsys.readouterr().err.strip().removeprefix("error: ").strip()


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (trainjob_yaml(num_nodes="0"), ["job.yaml:9:", 'TrainJob "default/job" is invalid', "spec.trainer.numNodes"]),
        (trainjob_yaml(num_nodes="99999999999999999999"), ["job.yaml:9:", "spec.trainer.numNodes", "2147483647"]),
        (trainjob_yaml(api_version="trainer.kubeflow.org/v1"), ["job.yaml:1:", "apiVersion", "v1alpha1"]),
    ],
    ids=["num-nodes-zero", "num-nodes-huge", "trainer-v1"],
)
def test_load_trainjob_refuses_in_the_clis_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needles: list[str]
) -> None:
    path = write(tmp_path, "job.yaml", text)
    with pytest.raises(LoadError) as refused:
        load_trainjob(path)
    message = str(refused.value)
    for needle in needles:
        assert needle in message
    assert render_message(path, capsys).endswith(message)


def test_load_runtimes_applies_the_runtime_webhook_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "runtime.yaml", RUNTIME.format(num_nodes=0))
    with pytest.raises(LoadError) as refused:
        load_runtimes(path)
    message = str(refused.value)
    assert message.startswith(f'{path}:7: ClusterTrainingRuntime "broken" is invalid: spec.mlPolicy.numNodes')
    # the same file handed to the CLI beside a TrainJob is refused in the same words
    job = write(tmp_path, "job.yaml", trainjob_yaml())
    assert main(["render", str(job), "--runtime", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_unknown_fields_are_warnings_naming_the_nearest_field(tmp_path: Path) -> None:
    path = write(tmp_path, "job.yaml", trainjob_yaml(proc="numProcsPerNode"))
    warnings: list[str] = []
    job = load_trainjob(path, warnings)
    assert job.metadata.name == "job"
    assert warnings == [
        f'{path}:10: warning: TrainJob "default/job": unknown field "spec.trainer.numProcsPerNode" '
        "(did you mean numProcPerNode?)"
    ]


def test_the_local_runner_refuses_with_the_webhooks_message(tmp_path: Path) -> None:
    # valid on its own; the plain-python runtime refuses numProcPerNode: auto (a rule that needs the runtime)
    text = (
        trainjob_yaml()
        .replace("torch-distributed", "plain-python")
        .replace("numProcPerNode: 1", "numProcPerNode: auto")
    )
    path = write(tmp_path, "job.yaml", text)
    trainjob_model, runtimes = load_trainjob_file(path)
    with pytest.raises(LocalRunError) as refused:
        plan_trainjob(trainjob_model, find_runtime(trainjob_model, runtimes))
    assert str(refused.value) == (
        "TrainJob \"default/job\" is invalid: spec.trainer.numProcPerNode: 'auto' is not accepted by runtime "
        "'plain-python': only torch runtimes take auto, cpu or gpu"
    )


def test_python_m_runtimes_local_exits_2_without_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "job.yaml", trainjob_yaml(num_nodes="0"))
    (tmp_path / "work").mkdir()  # `trainyard run` creates the job directory before it starts this launcher
    done = subprocess.run(
        [sys.executable, "-m", "runtimes.local", str(path), "--workdir", str(tmp_path / "work")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f'{path}:9: TrainJob "default/job" is invalid: spec.trainer.numNodes' in done.stderr


def test_the_sdk_refuses_a_bad_runtime_file(tmp_path: Path) -> None:
    path = write(tmp_path, "runtime.yaml", RUNTIME.format(num_nodes=0))
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", runtime_files=[path]))
    with pytest.raises(LocalRunError, match=r"runtime\.yaml:7: ClusterTrainingRuntime \"broken\" is invalid"):
        client.list_runtimes()
