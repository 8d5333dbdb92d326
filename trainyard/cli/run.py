"""`trainyard run TRAINJOB.yaml --local`: run a TrainJob on this machine with real PyTorch.

The TrainJob is rendered with its runtime (the same render the cluster gets) and its node pods
run as local processes: numNodes x numProcPerNode ranks on loopback, initializers first, logs
prefixed with the rank, the JobSet failurePolicy and podFailurePolicy honoured. A node that asks
for ``nvidia.com/gpu`` gets its own slice of this machine's GPUs (``--device`` overrides).
Cluster submission comes with the controllers; without ``--local`` this command says so.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from trainyard.cli.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trainjob", type=Path, metavar="TRAINJOB.yaml", help="the TrainJob to run")
    parser.add_argument("--local", action="store_true", help="run on this machine (no Kubernetes)")
    parser.add_argument(
        "--runtime",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a TrainingRuntime/ClusterTrainingRuntime file (repeatable); default: the built-in runtimes",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the job directory (status, logs, workspace, output); default: $TRAINYARD_HOME/jobs/NAME",
    )
    parser.add_argument(
        "--grace-period",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long stopped ranks get between SIGTERM and SIGKILL (default 5)",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="auto (default): each node gets its own slice of this machine's GPUs when the TrainJob asks for "
        "nvidia.com/gpu, else the CPU; cpu: hide every GPU (run a GPU job on the CPU anyway); cuda: require GPUs",
    )
    parser.add_argument("--strict", action="store_true", help="unknown fields are errors, not warnings")


def run(args: argparse.Namespace) -> int:
    if not args.local:
        raise UserError(
            "submitting to a cluster comes with the controllers; run this TrainJob on this machine with --local"
        )
    # Imported here so that `trainyard --help` and the other commands stay cheap.
    from runtimes.api.trainer import TrainJob
    from runtimes.local import LaunchOptions, LocalJobStore, LocalRunError
    from runtimes.local.devices import device_choice
    from runtimes.local.launcher import plan_visible_devices
    from runtimes.local.run import find_runtime, plan_trainjob, run_trainjob
    from runtimes.local.store import JobDirectory
    from runtimes.validation import validate_trainjob
    from trainyard.cli.inputs import one_trainjob, read_inputs, runtimes_of, trainjob_refusal

    read, inline_runtimes = one_trainjob(args.trainjob, strict=args.strict)
    trainjob = read.obj
    assert isinstance(trainjob, TrainJob)
    given = runtimes_of(read_inputs(args.runtime, strict=args.strict)) if args.runtime else []
    try:
        runtime = find_runtime(trainjob, [*given, *inline_runtimes])
    except LocalRunError as error:
        raise UserError(f"{read.where('spec.runtimeRef')}: {error}") from None
    try:
        # The rules the webhook applies with the runtime, before any process starts.
        if errors := validate_trainjob(trainjob, runtime):
            raise trainjob_refusal(read, errors)
        options = LaunchOptions(grace_seconds=args.grace_period, device=device_choice(args.device))
        # Before the job directory is reset: a job this machine cannot run leaves nothing behind.
        plan_visible_devices(plan_trainjob(trainjob, runtime), options)
        job = JobDirectory(args.workdir) if args.workdir else LocalJobStore().job(trainjob.metadata.name)
        job.reset()
        print(
            f"TrainJob {trainjob.metadata.name}: running locally with {runtime.kind} "
            f"{runtime.metadata.name} in {job.path}",
            flush=True,
        )
        result = asyncio.run(run_trainjob(trainjob, runtime, job, options, echo=_echo))
    except LocalRunError as error:
        raise UserError(str(error)) from None
    state = "Complete" if result.succeeded else "Failed"
    print(
        f"TrainJob {trainjob.metadata.name}: {state} ({result.reason}) after {result.restarts} restart(s); "
        f"status in {job.trainjob_file}",
        flush=True,
    )
    if result.succeeded:
        return 0
    return 130 if result.reason == "Stopped" else 1


def _echo(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
