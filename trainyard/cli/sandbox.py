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

from trainyard.cli.errors import UserError

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


def run(args: argparse.Namespace) -> int:
    if args.action != "up":
        raise UserError(f"unknown sandbox action {args.action!r}; use `trainyard sandbox up`")
    if args.speedup <= 0:
        raise UserError(f"--speedup must be positive, got {args.speedup:g}")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, got {args.port}")
    if not 0 <= args.dashboard_port <= 65535:
        raise UserError(f"--dashboard-port {args.dashboard_port} is not a TCP port; use 1-65535 (0 picks a free one)")
    if args.duration is not None and args.duration <= 0:
        raise UserError(f"--duration must be positive, got {args.duration:g}")
    out: Path = args.kubeconfig_out
    if not out.parent.is_dir():
        raise UserError(f"--kubeconfig-out {out}: the directory {out.parent} does not exist")
    return asyncio.run(_up(args))


async def _up(args: argparse.Namespace) -> int:
    import signal

    from sandbox.embedded import Sandbox
    from simulations.errors import SimulationInputError

    try:
        sandbox = Sandbox(args.scenario, speedup=args.speedup, port=args.port, kubeconfig_out=args.kubeconfig_out)
    except SimulationInputError as error:
        raise UserError(f"--scenario: {error}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        try:
            await sandbox.start()
        except OSError as error:
            await sandbox.stop()
            raise UserError(f"cannot listen on 127.0.0.1:{args.port}: {error.strerror or error}") from None
        except BaseException:
            await sandbox.stop()
            raise
        try:
            objects = sandbox.objects
            queues = sum(1 for _ in objects.of_kind("ClusterQueue"))
            print(
                f"trainyard sandbox: API server {sandbox.url} (scenario {sandbox.scenario.name}: "
                f"{objects.node_count} KWOK nodes, {queues} ClusterQueues, speedup {args.speedup:g}); "
                f"webhook and controllers running",
                file=sys.stderr,
            )
            path = sandbox.kubeconfig_path.resolve()
            print(f"trainyard sandbox: try  export KUBECONFIG={path}", file=sys.stderr)
            print("trainyard sandbox:      kubectl get nodes,clusterqueues,localqueues -A", file=sys.stderr)
            print(
                "trainyard sandbox:      kubectl apply -f manifests/samples/trainjobs/torch-2-nodes.yaml",
                file=sys.stderr,
            )
            print("trainyard sandbox:      kubectl get workloads,pods -A -w", file=sys.stderr)
            from trainyard.cli.dashboard import start_sandbox_dashboard

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
