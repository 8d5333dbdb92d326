"""`trainyard run TRAINJOB.yaml --local | --kubeconfig PATH`: run a TrainJob here, or on a cluster.

With ``--local`` the TrainJob is rendered with its runtime (the same render the cluster gets) and
its node pods run as local processes: numNodes x numProcPerNode ranks on loopback, initializers
first, logs prefixed with the rank, the JobSet failurePolicy and podFailurePolicy honoured. A node
that asks for ``nvidia.com/gpu`` gets its own slice of this machine's GPUs (``--device`` overrides).
With ``--kubeconfig`` it is submitted to that cluster and followed to its end
(``trainyard.cli.run.submission``).
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
    cluster = parser.add_argument_group("on a cluster (instead of --local)")
    cluster.add_argument(
        "--kubeconfig", type=Path, default=None, metavar="PATH", help="submit the TrainJob to this cluster"
    )
    cluster.add_argument("--context", default=None, metavar="NAME", help="the kubeconfig context (default: current)")
    cluster.add_argument(
        "--namespace", "-n", default=None, metavar="NS", help="default: the file's metadata.namespace, else default"
    )
    cluster.add_argument("--no-wait", action="store_true", help="create the TrainJob and return")
    cluster.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop following after this long (exit 124; the job goes on); default: until it finishes",
    )
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
    if args.local == (args.kubeconfig is not None):
        raise UserError(
            "say where to run the TrainJob: --local (on this machine, real PyTorch processes) "
            "or --kubeconfig PATH (submit it to that cluster and follow it)"
        )
    if args.kubeconfig is not None:
        return _run_on_cluster(args)
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


def _run_on_cluster(args: argparse.Namespace) -> int:
    from trainyard.cli.inputs import one_trainjob
    from trainyard.cli.run.submission import Submission, submit

    read, _ = one_trainjob(args.trainjob, strict=args.strict)  # the cluster's runtimes and webhooks judge the rest
    document = read.document.data
    namespace = args.namespace or (document.get("metadata") or {}).get("namespace") or "default"
    submission = Submission(document, read.where(), args.kubeconfig, args.context, str(namespace))
    try:
        return submit(submission, wait=not args.no_wait, timeout=args.timeout, echo=_echo)
    except KeyboardInterrupt:
        print("stopped following; the TrainJob goes on on the cluster", file=sys.stderr)
        return 130


def _echo(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
