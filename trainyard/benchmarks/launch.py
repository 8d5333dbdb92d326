"""`trainyard bench launch`: time to the first training step, local launcher vs plain torchrun.

Both run the bundled example trainer as 2 nodes x 2 processes over gloo on loopback. The
clock starts when the command is started and stops when rank 0 prints its step-1 metrics
line: for trainyard, the whole `trainyard run --local` (parse, render, plan, spawn); for
torchrun, two `python -m torch.distributed.run` agents (one per node, static rendezvous).
Medians over ``--repeat`` runs; ``ratio`` = trainyard / torchrun (target <= 1.2).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

FIRST_STEP = '"step":1,'
TRAINER = ["-m", "runtimes.examples.ddp_trainer", "--steps=3", "--checkpoint-every=100"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeat", type=int, default=3, help="runs per launcher (default 3)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _time_to_marker(commands: list[list[str]], env: dict[str, str], cwd: Path) -> float:
    """Seconds from starting ``commands`` until the first one prints the step-1 line."""
    start = time.perf_counter()
    processes = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
        for c in commands
    ]
    elapsed = None
    try:
        assert processes[0].stdout is not None
        for line in processes[0].stdout:
            if FIRST_STEP in line or "step 1/" in line:
                elapsed = time.perf_counter() - start
                break
        for process in processes:
            process.communicate(timeout=120)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    if elapsed is None:
        raise RuntimeError(f"no first training step seen from {commands[0]}")
    return elapsed


def _trainyard_run(workdir: Path, env: dict[str, str]) -> float:
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "bench-launch", "namespace": "default"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "numProcPerNode": 2, "command": ["torchrun", *TRAINER]},
        },
    }
    path = workdir / "trainjob.yaml"
    path.write_text(yaml.safe_dump(trainjob))
    job = workdir / "job"
    command = [sys.executable, "-m", "trainyard", "run", str(path), "--local", "--workdir", str(job)]
    return _time_to_marker([command], env, workdir)


def _torchrun(workdir: Path, env: dict[str, str]) -> float:
    port = _free_port()
    commands = [
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes=2",
            "--nproc-per-node=2",
            f"--node-rank={node}",
            "--master-addr=127.0.0.1",
            f"--master-port={port}",
            *TRAINER,
            f"--output-dir={workdir / 'torchrun-output'}",
        ]
        for node in (0, 1)
    ]
    return _time_to_marker(commands, env, workdir)


def run(args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    trainyard_times, torchrun_times = [], []
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-launch-") as tmp:
        for index in range(args.repeat):
            run_dir = Path(tmp) / str(index)
            run_dir.mkdir()
            # alternate the order so neither launcher always runs on a warmer page cache
            if index % 2 == 0:
                trainyard_times.append(_trainyard_run(run_dir, env))
                torchrun_times.append(_torchrun(run_dir, env))
            else:
                torchrun_times.append(_torchrun(run_dir, env))
                trainyard_times.append(_trainyard_run(run_dir, env))
    trainyard_s = statistics.median(trainyard_times)
    torchrun_s = statistics.median(torchrun_times)
    return {
        "trainyard_s": round(trainyard_s, 3),
        "torchrun_s": round(torchrun_s, 3),
        "ratio": round(trainyard_s / torchrun_s, 3),
        "repeat": args.repeat,
        "shape": "2 nodes x 2 processes, gloo, CPU",
    }
