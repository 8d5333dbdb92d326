"""`trainyard dashboard`: the web dashboard on loopback, over a cluster, files or local runs.

``--kubeconfig PATH`` mirrors the cluster with informers (queue objects, Workloads, Nodes,
TrainJobs, trainyard's pods) and loads the queues into an engine as `trainyard queues` does;
``--objects DIR`` reads YAML files once; ``--local`` shows only the local runs of
`trainyard run --local` (which every mode lists on its Jobs page too). ``--sim DIR`` adds the
runs of `trainyard simulate --out DIR` or `trainyard queues what-if --out DIR`. Read-only unless
``--allow-set-quota``: then a queue's page can change a quota through the same checks as
`trainyard queues set-quota`. `trainyard serve --dashboard-port` and `trainyard sandbox up` serve
the same pages from the controllers' own cache and engine (``controller_dashboard``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from trainyard.cli.errors import UserError
from trainyard.event_loop import run_server

if TYPE_CHECKING:
    from dashboard import DashboardData, DashboardServer, QuotaWriter
    from scheduler.controllers.service import ControllerService


def configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--kubeconfig", type=Path, metavar="PATH", help="watch the cluster of this kubeconfig")
    source.add_argument("--objects", type=Path, metavar="DIR", action="append", help="YAML files or directories")
    source.add_argument("--local", action="store_true", help="only the local runs of `trainyard run --local`")
    parser.add_argument("--context", metavar="NAME", help="with --kubeconfig: the context (default: the current one)")
    parser.add_argument(
        "--sim", type=Path, metavar="DIR", action="append", default=[], help="an --out DIR of simulate or what-if"
    )
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    parser.add_argument(
        "--local-store", type=Path, metavar="DIR", help="the local run store (default $TRAINYARD_HOME or ~/.trainyard)"
    )
    parser.add_argument(
        "--allow-set-quota", action="store_true", help="let the Queues page change quotas (checked as set-quota)"
    )
    parser.add_argument("--strict", action="store_true", help="with --objects: unknown fields are errors")


def check_arguments(args: argparse.Namespace) -> None:
    if args.kubeconfig is None and args.objects is None and not args.local:
        raise UserError("name what to show: --kubeconfig PATH (a cluster), --objects DIR (files) or --local")
    if args.context is not None and args.kubeconfig is None:
        raise UserError("--context needs --kubeconfig PATH")
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        raise UserError(f"--kubeconfig {args.kubeconfig}: no such file")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port} is not a TCP port; use 1-65535 (0 picks a free one)")
    for path in [*args.sim, *(args.objects or [])]:
        if not path.exists():
            raise UserError(f"{path}: no such file or directory")
    for path in args.sim:
        if not path.is_dir():
            raise UserError(f"--sim {path}: not a directory; give the --out DIR of trainyard simulate or what-if")


def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    return run_server(_serve(args))


def local_store(path: Path | None) -> Any:
    from runtimes.local import LocalJobStore

    return LocalJobStore(path)


async def start_server(data: DashboardData, host: str, port: int, who: str) -> DashboardServer:
    """The dashboard listening on ``host:port``, its address printed on stderr."""
    from dashboard import DashboardServer

    server = DashboardServer(data, host=host, port=port)
    try:
        await server.start()
    except OSError as error:
        raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    print(f"{who}: dashboard on {server.url}", file=sys.stderr, flush=True)
    return server


async def _serve(args: argparse.Namespace) -> int:
    mirror: ClusterMirror | None = None
    if args.kubeconfig is not None:
        mirror = await ClusterMirror.connect(args.kubeconfig, args.context, quota=args.allow_set_quota)
        data = mirror.data
    elif args.objects is not None:
        data = files_data(args.objects, strict=args.strict, quota=args.allow_set_quota)
    else:
        from dashboard import DashboardData

        data = DashboardData("local runs")
    data.local = local_store(args.local_store)
    data.simulations = list(args.sim)
    stop = asyncio.Event()
    from trainyard.cli.serve.cluster_connections import stop_on_signals

    server = None
    try:
        if mirror is not None:
            mirror.start(stop)
        server = await start_server(data, args.host, args.port, "trainyard dashboard")
        print("trainyard dashboard: Ctrl-C stops it", file=sys.stderr)
        with stop_on_signals(stop):
            await stop.wait()
    finally:
        if server is not None:
            await server.stop()
        if mirror is not None:
            await mirror.close()
    return mirror.exit_code() if mirror is not None else 0


def controller_dashboard(
    service: ControllerService, api_client: Any, label: str, quota: QuotaWriter | None = None
) -> DashboardData:
    """Pages from a running controller service: its cache, and its engine while it leads."""
    from dashboard import CachedQueues, ChangeCounter, ClusterAccess, DashboardData

    changes = ChangeCounter()
    cache = service.manager.cache
    changes.follow(cache)
    leader = service.leader
    mirror = service.queue.queue.mirror

    def live_engine() -> Any:
        leading = leader is None or leader.leading.is_set()
        return mirror.engine if leading and mirror.live else None

    queues = CachedQueues(cache, changes, live_engine=live_engine)
    return DashboardData(label, changes, queues, cache, ClusterAccess(api_client), quota_writer=quota)


# ------------------------------------------------------------------------------ sources


class ClusterMirror:
    """The cluster seen through informers into a cache, for `trainyard dashboard --kubeconfig`."""

    def __init__(self, api_client: Any, data: DashboardData, informers: list[Any], kubeconfig: Path) -> None:
        self.api_client = api_client
        self.data = data
        self.informers = informers
        self.kubeconfig = kubeconfig
        self.task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, kubeconfig: Path, context: str | None, *, quota: bool) -> ClusterMirror:
        from dashboard import WATCHED_KINDS, CachedQueues, ChangeCounter, ClusterAccess, DashboardData
        from scheduler.controllers.cache import ClusterCache
        from scheduler.controllers.constants import MANAGED_SELECTOR
        from scheduler.kube import Informer, KubeClient, KubeConfigError, load_api_client

        try:
            api_client = await load_api_client(kubeconfig, context=context)
        except KubeConfigError as error:
            raise UserError(str(error)) from None
        cache = ClusterCache()
        changes = ChangeCounter()
        changes.follow(cache)
        client = KubeClient(api_client)
        informers = [
            Informer(client, kind, cache, label_selector=MANAGED_SELECTOR if kind == "Pod" else None)
            for kind in WATCHED_KINDS
        ]
        writer = cluster_quota_writer(kubeconfig, context, cache) if quota else None
        data = DashboardData(f"cluster of {kubeconfig}", changes, CachedQueues(cache, changes), cache)
        data.cluster = ClusterAccess(api_client)
        data.quota_writer = writer
        return cls(api_client, data, informers, kubeconfig)

    def start(self, stop: asyncio.Event) -> None:
        async def run_all() -> None:
            async with asyncio.TaskGroup() as tasks:
                for informer in self.informers:
                    tasks.create_task(informer.run(), name=f"dashboard-informer-{informer.kind.kind}")

        self.task = asyncio.create_task(run_all(), name="dashboard-informers")
        self.task.add_done_callback(lambda task: stop.set())

    def exit_code(self) -> int:
        task = self.task
        if task is None or not task.done() or task.cancelled() or task.exception() is None:
            return 0
        print(f"trainyard dashboard: watching {self.kubeconfig} stopped: {task.exception()!r}", file=sys.stderr)
        return 1

    async def close(self) -> None:
        import contextlib

        from scheduler.kube import close_api_client

        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await close_api_client(self.api_client)


def cluster_quota_writer(kubeconfig: Path | None, context: str | None, cache: Any) -> QuotaWriter:
    """Applies a checked change as `queues set-quota --yes` does: a patch carrying the
    resourceVersion the dashboard saw, so a queue changed meanwhile is refused, not overwritten."""

    async def write(plan: Any, change: Any) -> str:
        from trainyard.cli.queues.cluster_side import patch_cluster_queue

        seen = cache.get("ClusterQueue", change.cluster_queue) or {}
        version = str((seen.get("metadata") or {}).get("resourceVersion") or "")
        groups = plan.new.to_dict()["spec"]["resourceGroups"]
        try:
            # no kubeconfig inside a Pod: load_api_client takes the service account's then
            target = cast(Path, kubeconfig)
            answer = await asyncio.to_thread(
                patch_cluster_queue, target, context, change.cluster_queue, version, groups
            )
        except UserError as error:
            return f"not applied: {error}"
        return f"applied: ClusterQueue {change.cluster_queue} patched (resourceVersion {answer['metadata'].get('resourceVersion')})"

    return write


def files_data(paths: list[Path], *, strict: bool, quota: bool) -> DashboardData:
    """The queues in YAML files, loaded once through the one validation path (as `queues --objects`)."""
    from dashboard import DashboardData, StaticQueues
    from trainyard.cli.queues.source import _load_files

    def load() -> StaticQueues:
        loaded = _load_files(paths, strict=strict)
        return StaticQueues(loaded.objects, loaded.workloads, loaded.namespaces)

    data = DashboardData("files " + ", ".join(map(str, paths)), queues=load())

    async def write(plan: Any, change: Any) -> str:
        from trainyard.cli.queues.file_edit import edit_file, find_cluster_queue_file

        path = find_cluster_queue_file(paths, change.cluster_queue)
        edit_file(path, change)
        data.queues = load()  # the files are the truth: read them again
        return f"applied: {path} edited in place"

    data.quota_writer = write if quota else None
    return data


class SandboxDashboard:
    """The dashboard of `trainyard sandbox up`, and what must stop with it."""

    def __init__(self, server: DashboardServer, mirror: ClusterMirror | None) -> None:
        self.server = server
        self.mirror = mirror

    async def stop(self) -> None:
        await self.server.stop()
        if self.mirror is not None:
            await self.mirror.close()


async def start_sandbox_dashboard(sandbox: Any, port: int) -> SandboxDashboard:
    """The dashboard of a sandbox: from its controllers' cache and engine where it runs them in
    this process (the embedded sandbox), else from its kubeconfig, as `trainyard dashboard` reads a cluster."""
    if not 0 <= port <= 65535:
        raise UserError(f"--dashboard-port {port} is not a TCP port; use 1-65535 (0 picks a free one)")
    service = getattr(getattr(sandbox, "controllers", None), "service", None)
    mirror = None
    if service is not None:
        api_client = await sandbox.api_client()  # the sandbox closes it when it stops
        data = controller_dashboard(service, api_client, f"sandbox {sandbox.url}")
    else:
        mirror = await ClusterMirror.connect(sandbox.kubeconfig_path, None, quota=False)
        mirror.start(asyncio.Event())
        data = mirror.data
    data.local = local_store(None)
    try:
        server = await start_server(data, "127.0.0.1", port, "trainyard sandbox")
    except UserError:
        if mirror is not None:
            await mirror.close()
        raise
    return SandboxDashboard(server, mirror)
