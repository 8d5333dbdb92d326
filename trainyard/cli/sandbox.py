"""``trainyard sandbox up``: the whole service against a sandbox cluster, in one process, on loopback.

A development and demonstration tool: an API server speaking the Kubernetes protocol (HTTPS with
a generated CA and a bearer token), seeded with a scenario's Nodes, Kueue objects and KWOK
Stages plus the bundled runtimes, with trainyard's webhook and controllers running against it
and KWOK moving the pods. Point kubectl (or any client) at the kubeconfig it writes. Ctrl-C
(SIGINT) or SIGTERM stops it cleanly. On a real cluster the same service is
``kubectl apply -k manifests/install``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from trainyard.cli.errors import UserError
from trainyard.event_loop import run_server

DEFAULT_KUBECONFIG = Path("sandbox.kubeconfig")


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = actions.add_parser(
        "up",
        help="start the sandbox cluster and the service; Ctrl-C stops it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    up.add_argument(
        "--scenario",
        metavar="NAME|FILE",
        default=None,
        help="a built-in simulation scenario (gpu-1k, kueue-baseline, ...) or a scenario YAML file "
        "(default: 'sandbox', 8 nodes x 8 GPUs, 4 teams)",
    )
    up.add_argument("--port", type=int, default=0, help="the API server's port on 127.0.0.1 (default: any free one)")
    up.add_argument(
        "--kubeconfig-out",
        type=Path,
        default=DEFAULT_KUBECONFIG,
        metavar="PATH",
        help=f"where to write the kubeconfig (default: ./{DEFAULT_KUBECONFIG})",
    )
    up.add_argument(
        "--speedup",
        type=float,
        default=1.0,
        help="divide every KWOK Stage delay by this (pods start and finish N times sooner; default 1)",
    )
    _real_flags(up)
    up.add_argument(
        "--dashboard-port",
        type=int,
        default=0,
        metavar="N",
        help="the web dashboard's port on 127.0.0.1 (default: any free one; the address is printed)",
    )
    up.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop by itself after this many seconds (default: run until Ctrl-C)",
    )


def _real_flags(up: argparse.ArgumentParser) -> None:
    """--real and what goes with it."""
    up.add_argument(
        "--real",
        action="store_true",
        help="run on real Kubernetes components built from their Go modules (etcd, kube-apiserver, "
        "kube-controller-manager, kube-scheduler, KWOK, JobSet; `make cluster-tools` builds them) "
        "instead of the embedded API server and its stand-ins",
    )
    up.add_argument(
        "--kueue",
        action="store_true",
        help="with --real: real Kueue v0.17 admits, and trainyard runs beside it as the controller of its "
        "topology AdmissionCheck (serve --mode admission-check; manifests/beside-kueue)",
    )
    up.add_argument(
        "--binaries",
        type=Path,
        metavar="DIR",
        default=None,
        help="with --real: a folder holding the component binaries (default: $KUBEBUILDER_ASSETS, then the "
        "cache `make cluster-tools` builds)",
    )


def run(args: argparse.Namespace) -> int:
    if args.action != "up":
        raise UserError(f"unknown sandbox action {args.action!r}; use `trainyard sandbox up`")
    if args.speedup <= 0:
        raise UserError(f"--speedup must be positive, got {args.speedup:g}")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, got {args.port}")
    if not 0 <= args.dashboard_port <= 65535:
        raise UserError(f"--dashboard-port {args.dashboard_port} is not a TCP port; use 1-65535 (0 picks a free one)")
    if args.binaries is not None and not args.real:
        raise UserError("--binaries needs --real")
    if args.kueue and not args.real:
        raise UserError("--kueue needs --real: Kueue runs on the real components (add --real)")
    if args.duration is not None and args.duration <= 0:
        raise UserError(f"--duration must be positive, got {args.duration:g}")
    out: Path = args.kubeconfig_out
    if not out.parent.is_dir():
        raise UserError(f"--kubeconfig-out {out}: the directory {out.parent} does not exist")
    return run_server(_up(args))


def _make_sandbox(args: argparse.Namespace) -> Any:
    """The embedded sandbox, or with ``--real`` the real one; bad options as a UserError."""
    from sandbox.embedded import Sandbox
    from sandbox.real.binaries import MissingComponent
    from sandbox.real.service import RealSandbox
    from simulations.errors import SimulationInputError

    options = {"speedup": args.speedup, "port": args.port, "kubeconfig_out": args.kubeconfig_out}
    try:
        if args.real:
            return RealSandbox(args.scenario, binaries=args.binaries, kueue=args.kueue, **options)
        return Sandbox(args.scenario, **options)
    except SimulationInputError as error:
        raise UserError(f"--scenario: {error}") from None
    except MissingComponent as error:
        raise UserError(str(error)) from None


async def _start(sandbox: Any, args: argparse.Namespace) -> None:
    from sandbox.real.binaries import MissingComponent
    from sandbox.real.processes import ComponentFailed

    try:
        await sandbox.start()
    except OSError as error:
        await sandbox.stop()
        raise UserError(f"cannot listen on 127.0.0.1:{args.port}: {error.strerror or error}") from None
    except (ComponentFailed, MissingComponent) as error:
        await sandbox.stop()
        raise UserError(f"the real cluster did not start: {error}") from None
    except BaseException:
        await sandbox.stop()
        raise


def _greet(sandbox: Any, args: argparse.Namespace) -> Path:
    objects = sandbox.objects
    queues = sum(1 for _ in objects.of_kind("ClusterQueue"))
    server = (
        "kube-apiserver (real: etcd, kube-controller-manager, kube-scheduler, KWOK, JobSet)"
        if args.real
        else "embedded API server"
    )
    if args.real and args.kueue:
        server += " with Kueue admitting, trainyard its topology AdmissionCheck"
    print(
        f"trainyard sandbox: {server} at {sandbox.url} (scenario {sandbox.scenario.name}: "
        f"{objects.node_count} KWOK nodes, {queues} ClusterQueues, speedup {args.speedup:g}); "
        f"webhook and controllers running",
        file=sys.stderr,
    )
    path: Path = sandbox.kubeconfig_path.resolve()
    for line in (
        f"try  export KUBECONFIG={path}",
        "     kubectl get nodes,clusterqueues,localqueues -A",
        "     kubectl apply -f manifests/samples/trainjobs/torch-2-nodes.yaml",
        "     kubectl get workloads -A -w",
    ):
        print(f"trainyard sandbox: {line}", file=sys.stderr)
    if not args.real:
        print("trainyard sandbox: the same on real Kubernetes components: add --real", file=sys.stderr)
    return path


async def _up(args: argparse.Namespace) -> int:
    import signal

    from trainyard.cli.dashboard import start_sandbox_dashboard

    sandbox = _make_sandbox(args)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await _start(sandbox, args)
        try:
            path = _greet(sandbox, args)
            dashboard = await start_sandbox_dashboard(sandbox, args.dashboard_port)
            print("trainyard sandbox: Ctrl-C stops it", file=sys.stderr)
            print(path, flush=True)  # stdout: the kubeconfig path alone, for scripts
            try:
                async with asyncio.timeout(args.duration):
                    await stop.wait()
            except TimeoutError:
                pass
            print("trainyard sandbox: stopping", file=sys.stderr)
            await dashboard.stop()
        finally:
            await sandbox.stop()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    print("trainyard sandbox: stopped", file=sys.stderr)
    return 0
