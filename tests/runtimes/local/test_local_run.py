"""`trainyard run --local` end to end: real processes, real torch.distributed over gloo."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import trainjob as build_trainjob
from trainyard.cli.main import main

HERE = Path(__file__).resolve().parent
TEST_RUNTIME = HERE / "fixtures" / "torch-local-test.yaml"
RANKS = ["node-0/rank-0", "node-0/rank-1", "node-1/rank-2", "node-1/rank-3"]


def write_trainjob(
    tmp_path: Path,
    command: list[str],
    env: dict[str, str] | None = None,
    runtime: str = "torch-local-test",
    num_nodes: int = 2,
    extra_spec: dict[str, Any] | None = None,
) -> Path:
    trainer: dict[str, Any] = {"numNodes": num_nodes, "numProcPerNode": 2, "command": command}
    if env:
        trainer["env"] = [{"name": k, "value": v} for k, v in env.items()]
    document = build_trainjob("local-test", runtime=runtime, nodes=None, trainer=trainer, **(extra_spec or {}))
    path = tmp_path / "trainjob.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def run_cli(trainjob: Path, workdir: Path, *extra: str) -> int:
    return main(["run", str(trainjob), "--local", "--workdir", str(workdir), "--runtime", str(TEST_RUNTIME), *extra])


def status_of(workdir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((workdir / "trainjob.json").read_text())
    return data


def condition(workdir: Path, kind: str) -> dict[str, Any]:
    conditions = status_of(workdir)["status"]["conditions"]
    return next(c for c in conditions if c["type"] == kind and c["status"] == "True")


def metrics_steps(log: str) -> list[tuple[int, float]]:
    steps = []
    for line in log.splitlines():
        _, _, text = line.partition("] ")
        if text.startswith("trainyard:metrics "):
            values = json.loads(text[len("trainyard:metrics ") :])
            steps.append((values["step"], values["loss"]))
    return steps


DDP = ["torchrun", "-m", "runtimes.examples.ddp_trainer"]


def test_ddp_two_by_two_trains_restarts_once_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fault = {"TRAINYARD_FAIL_AT_STEP": "5", "TRAINYARD_FAIL_RANK": "3"}
    trainjob = write_trainjob(tmp_path, [*DDP, "--steps=8", "--checkpoint-every=2"], fault)
    workdir = tmp_path / "job"

    assert run_cli(trainjob, workdir) == 0

    out = capsys.readouterr().out
    for rank in RANKS:
        assert f"[{rank}] rank " in out, f"no output from {rank}"
    assert "[node-1/rank-3] fault injection: rank 3 exits with 1 at step 5" in out
    assert "resumed from checkpoint step-000004.pt at step 4" in out
    assert "step 8/8 loss=" in out  # metrics are shown as people read them
    steps = metrics_steps((workdir / "logs" / "node-0.log").read_text())
    numbers = [step for step, _ in steps]
    # first attempt reached step 4, the restart continued at 5 (not at 1)
    assert numbers == [1, 2, 3, 4, 5, 6, 7, 8]
    assert steps[-1][1] < steps[0][1] / 2, f"loss did not decrease: {steps}"
    job = status_of(workdir)
    assert job["metadata"]["annotations"]["local.trainyard.dev/restarts"] == "1"
    assert condition(workdir, "Complete")["reason"] == "AllJobsCompleted"
    trainer_status = job["status"]["trainerStatus"]
    assert trainer_status["progressPercentage"] == 100
    assert {m["name"] for m in trainer_status["metrics"]} >= {"loss", "samples_per_second", "step"}
    assert (workdir / "output" / "model.pt").is_file()


def test_second_failure_leaves_the_job_failed_with_the_reason(tmp_path: Path) -> None:
    fault = {"TRAINYARD_FAIL_AT_STEP": "2", "TRAINYARD_FAIL_RANK": "1", "TRAINYARD_FAIL_ATTEMPT": "all"}
    trainjob = write_trainjob(tmp_path, [*DDP, "--steps=4", "--checkpoint-every=1"], fault, num_nodes=1)
    workdir = tmp_path / "job"

    assert run_cli(trainjob, workdir) == 1

    failed = condition(workdir, "Failed")
    assert failed["reason"] == "ReachedMaxRestarts"
    assert "node-0/rank-1 exited with code 1" in failed["message"]
    assert status_of(workdir)["metadata"]["annotations"]["local.trainyard.dev/restarts"] == "1"


EXIT_ON_FIRST_ATTEMPT = "import os, sys; sys.exit({code} if os.environ['TRAINYARD_RESTART_ATTEMPT'] == '0' else 0)"


def test_pod_failure_policy_failjob_fails_at_once(tmp_path: Path) -> None:
    trainjob = write_trainjob(tmp_path, ["python", "-c", EXIT_ON_FIRST_ATTEMPT.format(code=2)])
    workdir = tmp_path / "job"

    assert run_cli(trainjob, workdir) == 1

    failed = condition(workdir, "Failed")
    assert failed["reason"] == "FailJobSetFailurePolicyAction"
    assert "matching FailJob rule at index 1" in failed["message"]
    assert "local.trainyard.dev/restarts" not in status_of(workdir)["metadata"]["annotations"]


def test_pod_failure_policy_ignore_does_not_count_against_max_restarts(tmp_path: Path) -> None:
    # exit 42 on the first attempt: restarted without counting (two ignored restarts would pass
    # maxRestarts 1 as well, so fail the second attempt with 42 too and expect completion)
    program = "import os, sys; sys.exit(42 if int(os.environ['TRAINYARD_RESTART_ATTEMPT']) < 2 else 0)"
    trainjob = write_trainjob(tmp_path, ["python", "-c", program])
    workdir = tmp_path / "job"

    assert run_cli(trainjob, workdir) == 0

    annotations = status_of(workdir)["metadata"]["annotations"]
    assert annotations["local.trainyard.dev/restarts"] == "2"
    assert annotations["local.trainyard.dev/restarts-count-towards-max"] == "0"


def _processes_with_env(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_ctrl_c_stops_every_rank(tmp_path: Path) -> None:
    program = "import os, time; print('up', os.environ['RANK'], flush=True); time.sleep(60)"
    trainjob = write_trainjob(tmp_path, ["python", "-c", program])
    workdir = tmp_path / "job"
    command = [sys.executable, "-m", "trainyard", "run", str(trainjob), "--local", "--workdir", str(workdir)]
    launcher = subprocess.Popen(
        [*command, "--runtime", str(TEST_RUNTIME)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    marker = f"TRAINYARD_OUTPUT_DIR={workdir / 'output'}"
    try:
        log = workdir / "logs" / "all.log"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if log.is_file() and log.read_text().count("] up ") == 4:
                break
            time.sleep(0.1)
        assert len(_processes_with_env(marker)) == 4
        launcher.send_signal(signal.SIGINT)
        output, _ = launcher.communicate(timeout=30)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 130, output
    assert _processes_with_env(marker) == []
    failed = condition(workdir, "Failed")
    assert (failed["reason"], failed["message"]) == ("Stopped", "stopped by SIGINT: every rank was terminated")


def test_file_initializer_copies_into_the_workspace(tmp_path: Path) -> None:
    source = tmp_path / "data"
    source.mkdir()
    (source / "train.txt").write_text("hello")
    program = (
        "import os, sys; sys.exit(0 if os.path.isfile(os.environ['TRAINYARD_WORKSPACE'] + '/dataset/train.txt') else 9)"
    )
    trainjob = write_trainjob(
        tmp_path,
        ["python", "-c", program],
        runtime="torch-distributed-with-initializers",
        num_nodes=1,
        extra_spec={"initializer": {"dataset": {"storageUri": f"file://{source}"}}},
    )
    workdir = tmp_path / "job"
    assert main(["run", str(trainjob), "--local", "--workdir", str(workdir)]) == 0
    assert (workdir / "workspace" / "dataset" / "train.txt").read_text() == "hello"


def test_hf_initializer_fails_fast_when_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    trainjob = write_trainjob(
        tmp_path,
        ["python", "-c", "pass"],
        runtime="torch-distributed-with-initializers",
        num_nodes=1,
        extra_spec={"initializer": {"model": {"storageUri": "hf://meta-llama/Llama-3.2-1B-Instruct"}}},
    )
    workdir = tmp_path / "job"
    assert main(["run", str(trainjob), "--local", "--workdir", str(workdir)]) == 1
    failed = condition(workdir, "Failed")
    assert "model-initializer exited with code 3" in failed["message"]
    assert "cannot reach http://127.0.0.1:9 (offline?)" in failed["message"]
    assert "use a file:// STORAGE_URI" in failed["message"]


@pytest.mark.parametrize(
    ("spec_change", "expected"),
    [
        (
            {"runtimeRef": {"name": "no-such-runtime"}},
            "spec.runtimeRef: ClusterTrainingRuntime 'no-such-runtime' not found",
        ),
        ({"trainer": {"numNodes": 0, "command": ["python"]}}, "spec.trainer.numNodes"),
        (
            {"trainer": {"command": ["python"], "env": [{"name": "PET_NNODES", "value": "3"}]}},
            "spec.trainer.env",
        ),
    ],
    ids=["missing-runtime", "num-nodes-zero", "reserved-pet-env"],
)
def test_bad_trainjobs_get_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec_change: dict[str, Any], expected: str
) -> None:
    document = build_trainjob("bad", nodes=None, **spec_change)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    assert main(["run", str(path), "--local", "--workdir", str(tmp_path / "job")]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err


def test_invalid_yaml_and_missing_local_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: TrainJob\nspec: [unclosed\n")
    assert main(["run", str(path), "--local"]) == 2
    assert re.search(rf"{re.escape(str(path))}:\d+:\d+: invalid YAML", capsys.readouterr().err)
    assert main(["run", str(path)]) == 2
    assert "--local (on this machine" in capsys.readouterr().err


def test_workdir_that_is_not_a_job_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    trainjob = write_trainjob(tmp_path, ["python", "-c", "pass"])
    assert run_cli(trainjob, precious) == 2
    assert "holds no trainjob.json" in capsys.readouterr().err
    assert (precious / "notes.txt").read_text() == "keep me"
    assert os.listdir(precious) == ["notes.txt"]
