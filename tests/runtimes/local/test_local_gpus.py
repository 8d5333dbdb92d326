"""GPUs in local runs: each node's slice of the host's GPUs, the refusals, and --device.

The host's GPUs are set through CUDA_VISIBLE_DEVICES in each test's environment, so the slicing
is checked on any machine; the processes that run here are real (the launcher, the example
trainer over gloo on the CPU). The one test that trains on CUDA runs only where torch sees a GPU.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.examples.metrics import parse_metrics_line
from runtimes.local.devices import Device, host_gpus, node_visible_devices
from runtimes.local.errors import LocalRunError
from runtimes.local.launcher import LaunchOptions, plan_visible_devices
from runtimes.local.plan import LocalPlan
from runtimes.local.run import find_runtime, load_trainjob_file, plan_trainjob
from runtimes.local.torchrun import node_processes
from runtimes.sdk import CustomTrainer, LocalBackendConfig, TrainerClient
from trainyard.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
GPU_SAMPLE = ROOT / "manifests" / "samples" / "trainjobs" / "local-ddp-gpu.yaml"
DDP = ["torchrun", "-m", "runtimes.examples.ddp_trainer"]
PRINT_VISIBLE = ["python", "-c", "import os; print('visible', repr(os.environ.get('CUDA_VISIBLE_DEVICES')))"]


def gpu_trainjob(tmp_path: Path, command: list[str], nodes: int = 2, gpus: int = 1, nproc: int | str = 1) -> Path:
    """A TrainJob of the built-in torch-distributed runtime asking ``gpus`` nvidia.com/gpu per node."""
    resources: dict[str, Any] = {"requests": {"cpu": "1"}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": gpus}
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "gpu-job", "namespace": "default"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "numNodes": nodes,
                "numProcPerNode": nproc,
                "command": command,
                "resourcesPerNode": resources,
            },
        },
    }
    path = tmp_path / "trainjob.yaml"
    path.write_text(yaml.safe_dump(trainjob))
    return path


def plan_of(path: Path) -> LocalPlan:
    trainjob, inline = load_trainjob_file(path)
    return plan_trainjob(trainjob, find_runtime(trainjob, inline))


@pytest.mark.parametrize(
    ("host", "nodes", "gpus", "nproc", "expected"),
    [
        ("0,1,2,3", 2, 2, "gpu", {"node-0/rank-0": "0,1", "node-0/rank-1": "0,1", "node-1/rank-2": "2,3"}),
        ("0,1,2,3", 2, 2, "auto", {"node-0/rank-1": "0,1", "node-1/rank-2": "2,3", "node-1/rank-3": "2,3"}),
        ("4,5,6,7", 3, 1, 1, {"node-0/rank-0": "4", "node-1/rank-1": "5", "node-2/rank-2": "6"}),
        ("GPU-aa,GPU-bb", 1, 2, 1, {"node-0/rank-0": "GPU-aa,GPU-bb"}),
    ],
    ids=["gpu-means-one-rank-per-gpu", "auto-with-gpus-too", "host-already-restricted", "uuids"],
)
def test_each_node_gets_its_own_slice_of_the_host_gpus(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    host: str,
    nodes: int,
    gpus: int,
    nproc: int | str,
    expected: dict[str, str],
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", host)
    plan = plan_of(gpu_trainjob(tmp_path, DDP, nodes=nodes, gpus=gpus, nproc=nproc))
    visible = plan_visible_devices(plan, LaunchOptions())
    specs = {spec.label: spec.env for spec in node_processes(plan, 29500, {}, None, visible)}
    ranks_per_node = gpus if isinstance(nproc, str) else nproc
    assert len(specs) == nodes * ranks_per_node
    for label, devices in expected.items():
        assert specs[label]["CUDA_VISIBLE_DEVICES"] == devices
        assert specs[label]["LOCAL_WORLD_SIZE"] == str(ranks_per_node)
        assert specs[label]["WORLD_SIZE"] == str(nodes * ranks_per_node)


def test_too_few_host_gpus_are_refused_naming_the_job_field_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    trainjob = gpu_trainjob(tmp_path, DDP, nodes=2, gpus=1)
    with pytest.raises(LocalRunError) as refused:
        plan_visible_devices(plan_of(trainjob), LaunchOptions())
    message = str(refused.value)
    assert message.startswith('TrainJob "default/gpu-job": spec.trainer.resourcesPerNode nvidia.com/gpu is 1')
    assert "2 GPU(s) in all, but this machine has 1 (CUDA_VISIBLE_DEVICES='0')" in message
    assert "lower numNodes or nvidia.com/gpu to fit, or run on the CPU anyway with --device cpu" in message

    workdir = tmp_path / "job"
    assert main(["run", str(trainjob), "--local", "--workdir", str(workdir)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not workdir.exists()  # refused before the job directory was made: a rerun is not blocked


@pytest.mark.parametrize(
    ("host", "gpus", "nproc", "device", "words"),
    [
        ("", 1, 1, "auto", "this machine has 0 (CUDA_VISIBLE_DEVICES='')"),
        ("-1", 1, 1, "cuda", "this machine has 0 (CUDA_VISIBLE_DEVICES='-1')"),
        ("0,1", 0, 1, "cuda", "--device cuda, but spec.trainer.resourcesPerNode nvidia.com/gpu is not set"),
        ("0,1", 1, "gpu", "cpu", "numProcPerNode 'gpu' starts one process per GPU of a node"),
        ("0,1", 0, "gpu", "auto", "ask for GPUs (spec.trainer.resourcesPerNode nvidia.com/gpu)"),
    ],
    ids=[
        "no-gpus-on-host",
        "minus-one-means-none",
        "cuda-without-a-gpu-request",
        "gpu-procs-on-cpu",
        "gpu-procs-no-gpus",
    ],
)
def test_runs_that_cannot_get_their_gpus_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, gpus: int, nproc: int | str, device: Device, words: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", host)
    plan = plan_of(gpu_trainjob(tmp_path, DDP, nodes=1, gpus=gpus, nproc=nproc))
    with pytest.raises(LocalRunError) as refused:
        plan_visible_devices(plan, LaunchOptions(device=device))
    assert words in str(refused.value)


@pytest.mark.parametrize(
    ("inherited", "device", "expected"),
    [("-1", "auto", "-1"), ("2,3", "auto", ""), ("2,3", "cpu", "")],
    ids=["no-host-gpu-left-alone", "host-gpus-hidden-as-on-a-cluster", "cpu-hides-every-gpu"],
)
def test_a_job_without_gpus_sees_none_of_the_hosts(
    tmp_path: Path, inherited: str, device: Device, expected: str
) -> None:
    """As on a cluster, where a pod that asks for no GPU sees none: a CPU job never lands on one."""
    plan = plan_of(gpu_trainjob(tmp_path, DDP, nodes=2, gpus=0, nproc=1))
    base = {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": inherited}
    visible = node_visible_devices(plan, device, base)
    for spec in node_processes(plan, 29500, base, None, visible):
        assert spec.env.get("CUDA_VISIBLE_DEVICES") == expected


def _fake_nvidia_smi(folder: Path, listing: str) -> None:
    """Stands in for the hardware: prints what ``nvidia-smi -L`` prints on a machine with GPUs."""
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{listing}EOF\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_host_gpus_are_counted_without_torch(tmp_path: Path) -> None:
    listing = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n"
        "  MIG 3g.40gb     Device  0: (UUID: MIG-1)\n"
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n"
    )
    _fake_nvidia_smi(tmp_path / "bin", listing)
    found = host_gpus({"PATH": str(tmp_path / "bin")})
    assert (found.ids, found.source) == (("0", "1"), "nvidia-smi -L")
    # CUDA_VISIBLE_DEVICES wins over nvidia-smi; an invalid entry ends the list, as in CUDA
    assert host_gpus({"PATH": str(tmp_path / "bin"), "CUDA_VISIBLE_DEVICES": "1,-1,0"}).ids == ("1",)
    driver = tmp_path / "driver"
    (driver / "0000:18:00.0").mkdir(parents=True)
    assert host_gpus({"PATH": str(tmp_path / "empty")}, driver).ids == ("0",)
    assert host_gpus({"PATH": str(tmp_path / "empty")}, tmp_path / "absent").ids == ()


def test_device_flag_reaches_the_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    trainjob = gpu_trainjob(tmp_path, PRINT_VISIBLE, nodes=2, gpus=2)
    assert main(["run", str(trainjob), "--local", "--workdir", str(tmp_path / "auto")]) == 0
    out = capsys.readouterr().out
    assert "[launcher] GPUs: node-0 gets CUDA_VISIBLE_DEVICES=0,1; node-1 gets CUDA_VISIBLE_DEVICES=2,3" in out
    assert "[node-0/rank-0] visible '0,1'" in out
    assert "[node-1/rank-1] visible '2,3'" in out

    assert main(["run", str(trainjob), "--local", "--workdir", str(tmp_path / "cpu"), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "[node-0/rank-0] visible ''" in out
    assert "[node-1/rank-1] visible ''" in out

    with pytest.raises(SystemExit) as bad:
        main(["run", str(trainjob), "--local", "--device", "tpu"])
    assert bad.value.code == 2
    assert "argument --device: invalid choice: 'tpu'" in capsys.readouterr().err


def print_visible_devices() -> None:
    import os

    print("sdk sees", repr(os.environ.get("CUDA_VISIBLE_DEVICES")))


def test_sdk_local_backend_checks_gpus_up_front_and_passes_device_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    trainer = CustomTrainer(func=print_visible_devices, num_nodes=1, resources_per_node={"cpu": 1, "gpu": 1})
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "auto"))
    with pytest.raises(ValueError, match=r"this machine has 0 \(CUDA_VISIBLE_DEVICES=''\)"):
        client.train(trainer=trainer)
    assert client.list_jobs() == []  # refused in the caller, before a launcher was started

    client = TrainerClient(LocalBackendConfig(root=tmp_path / "cpu", device="cpu"))
    name = client.train(trainer=trainer)
    job = client.wait_for_job_status(name, timeout=60, polling_interval=0.2)
    logs = "\n".join(client.get_job_logs(name, step=None))
    assert job.status == "Complete", logs
    assert "[node-0/rank-0] sdk sees ''" in logs


def metrics_losses(log: str) -> list[float]:
    """The loss of every metrics line in a rank-prefixed log, read as the launcher reads them."""
    parsed = (parse_metrics_line(line.partition("] ")[2]) for line in log.splitlines())
    return [float(values["loss"]) for values in parsed if values is not None]


def test_gpu_job_trains_on_the_cpu_with_device_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    trainjob = gpu_trainjob(tmp_path, [*DDP, "--steps=6", "--checkpoint-every=3"], nodes=1, gpus=2, nproc=2)
    workdir = tmp_path / "job"
    assert main(["run", str(trainjob), "--local", "--workdir", str(workdir), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "[node-0/rank-0] rank 0/2 on cpu (gloo)" in out
    assert "[node-0/rank-1] rank 1/2 on cpu (gloo)" in out
    losses = metrics_losses((workdir / "logs" / "node-0.log").read_text())
    assert len(losses) == 6
    assert losses[-1] < losses[0]
    assert (workdir / "output" / "model.pt").is_file()


def test_trainer_device_cuda_without_a_gpu_says_why(tmp_path: Path) -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU for this process, whatever the machine
    command = [sys.executable, "-m", "runtimes.examples.ddp_trainer", "--device", "cuda", "--output-dir", str(tmp_path)]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "error: --device cuda, but torch.cuda.is_available() is False here" in done.stderr
    assert "CUDA_VISIBLE_DEVICES=''" in done.stderr
    assert "Traceback" not in done.stderr


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.skipif(not _cuda_available(), reason="needs a GPU that torch sees (torch.cuda.is_available())")
def test_gpu_sample_trains_on_cuda_over_nccl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    workdir = tmp_path / "job"
    assert main(["run", str(GPU_SAMPLE), "--local", "--workdir", str(workdir)]) == 0
    out = capsys.readouterr().out
    assert "[launcher] GPUs: node-0 gets CUDA_VISIBLE_DEVICES=" in out
    assert "[node-0/rank-0] rank 0/1 on cuda:0 (nccl)" in out, out
    losses = metrics_losses((workdir / "logs" / "node-0.log").read_text())
    assert len(losses) == 30
    assert losses[-1] < losses[0] / 2, f"loss did not decrease: {losses}"
    trainjob = json.loads((workdir / "trainjob.json").read_text())
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in trainjob["status"]["conditions"])
    # The final model holds CPU tensors: it loads on a machine without a GPU.
    state = torch.load(workdir / "output" / "model.pt", weights_only=True)
    assert state
    assert all(tensor.device.type == "cpu" for tensor in state.values())
