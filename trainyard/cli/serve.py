"""`trainyard serve [webhook|controller]`: run trainyard's cluster services.

``webhook`` is the admission webhook (HTTPS, AdmissionReview v1); ``controller`` the controllers
(queue controller, launcher, pod ungater) behind leader election on a Lease, so with several
replicas exactly one admits while the webhook serves on all. `trainyard serve` without a name
runs both in one asyncio process; their metrics share the webhook's /metrics.

The webhook's object cache is fed from a directory of YAML (``--objects DIR``) or from a cluster:
``--kubeconfig PATH``, or the Pod's service account when it runs in a cluster with neither flag.
From a cluster, one informer per cached kind mirrors it, and /readyz says ready only once every
kind has been listed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient
    from prometheus_client import CollectorRegistry

    from scheduler.controllers.service import ControllerService
    from scheduler.kube import InformerGroup
    from webhooks.objects import ObjectCache

from trainyard.cli.errors import UserError

SERVICES = ("webhook", "controller")
LAUNCHER_MODES = ("jobset", "trainer")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run trainyard's cluster services. SERVICE 'webhook' is the admission webhook "
        "(/mutate/trainjobs, /validate/trainjobs, /validate/kueue, /validate/runtimes, /healthz, "
        "/readyz, /metrics over HTTPS); 'controller' runs the queue controller, the launcher and "
        "the pod ungater against the cluster (leader-elected; /metrics, /healthz on --metrics-port). "
        "Without SERVICE both run in one process."
    )
    parser.add_argument("service", nargs="?", choices=SERVICES, help="the service to run (default: all)")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=9443, help="HTTPS port (default 9443)")
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument(
        "--tls-cert-dir",
        type=Path,
        metavar="DIR",
        help="directory with tls.crt and tls.key (a mounted cert-manager Secret); reloaded when they change",
    )
    tls.add_argument("--self-signed", action="store_true", help="generate a CA and a serving certificate at start")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--objects",
        type=Path,
        metavar="DIR",
        help="directory of YAML with runtimes, Kueue queues/flavors/topologies, Namespaces and Nodes",
    )
    source.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="PATH",
        help="watch runtimes, Kueue objects, Namespaces and Nodes in the cluster of this kubeconfig "
        "(default inside a Pod without --objects: the in-cluster service account)",
    )
    parser.add_argument("--context", help="with --kubeconfig: the kubeconfig context to use (default: current)")
    parser.add_argument(
        "--write-ca-bundle",
        type=Path,
        metavar="FILE",
        help="with --self-signed: write the CA into clientConfig.caBundle of the webhook configurations in FILE",
    )
    parser.add_argument(
        "--service-name", default="trainyard-webhook", help="Service name for the self-signed certificate"
    )
    parser.add_argument(
        "--service-namespace", default="trainyard-system", help="Service namespace for the self-signed certificate"
    )
    parser.add_argument(
        "--max-body-bytes", type=int, default=3 * 1024 * 1024, help="largest request body accepted (default 3 MiB)"
    )
    parser.add_argument(
        "--reload-interval", type=float, default=10.0, help="seconds between checks of --tls-cert-dir files"
    )
    controller = parser.add_argument_group("controller")
    controller.add_argument(
        "--launcher",
        choices=LAUNCHER_MODES,
        default="jobset",
        help="how admitted TrainJobs start: 'jobset' (trainyard creates the JobSet; default) or 'trainer' "
        "(Kubeflow Trainer's controller runs them; trainyard writes a runtimePatch)",
    )
    controller.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="hold a coordination.k8s.io Lease so only one replica runs the controllers (default: on)",
    )
    controller.add_argument(
        "--lease-namespace",
        help="namespace of the Lease (default: $POD_NAMESPACE, the service account's, trainyard-system)",
    )
    controller.add_argument(
        "--identity", help="this replica's name in the Lease (default: $POD_NAME or hostname, and pid)"
    )
    controller.add_argument(
        "--wait-for-pods-ready",
        type=float,
        metavar="SECONDS",
        help="Kueue's waitForPodsReady: evict and requeue an admitted job whose pods are not all ready in time",
    )
    controller.add_argument(
        "--metrics-port",
        type=int,
        default=8080,
        help="'serve controller' alone: HTTP port for /metrics, /healthz, /readyz (default 8080; 0 picks one)",
    )


def run(args: argparse.Namespace) -> int:
    if args.service == "controller":
        if args.objects is not None:
            raise UserError("'serve controller' works against a cluster: use --kubeconfig PATH or run it in a Pod")
        if args.context is not None and args.kubeconfig is None:
            raise UserError("--context needs --kubeconfig PATH")
        return asyncio.run(_serve_controller_alone(args))
    if args.tls_cert_dir is None and not args.self_signed:
        raise UserError("choose TLS: --tls-cert-dir DIR (tls.crt, tls.key) or --self-signed")
    if args.write_ca_bundle is not None and not args.self_signed:
        raise UserError("--write-ca-bundle needs --self-signed (with --tls-cert-dir the CA is cert-manager's)")
    if args.context is not None and args.kubeconfig is None:
        raise UserError("--context needs --kubeconfig PATH")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port} is not a TCP port; use 1-65535 (0 picks a free one)")
    return asyncio.run(_serve(args))


async def _serve(args: argparse.Namespace) -> int:
    import signal
    import tempfile

    from scheduler.kube import running_in_cluster
    from webhooks.objects import ObjectCache, ObjectFeedError, load_directory
    from webhooks.server import WebhookServer
    from webhooks.tls import (
        CertificateFiles,
        CertificateReloader,
        TLSError,
        self_signed,
        server_context,
        service_hosts,
        write_ca_bundle,
    )

    cache = ObjectCache()
    from_cluster = args.objects is None and (args.kubeconfig is not None or running_in_cluster())
    if args.objects is not None:
        try:
            count = load_directory(args.objects, cache)
        except ObjectFeedError as error:
            raise UserError(str(error)) from None
        print(f"trainyard serve: loaded {count} objects from {args.objects}", file=sys.stderr)
    elif not from_cluster:
        print(
            "trainyard serve: neither --objects DIR nor --kubeconfig PATH (and not in a Pod): the webhook "
            "knows no runtimes or queues, so queued TrainJobs will be refused",
            file=sys.stderr,
        )
        cache.mark_loaded()

    with tempfile.TemporaryDirectory(prefix="trainyard-tls-") as scratch:
        try:
            if args.self_signed:
                hosts = service_hosts(args.service_name, args.service_namespace)
                if args.host not in ("0.0.0.0", "::", *hosts):
                    hosts.append(args.host)
                bundle = self_signed(hosts)
                files = bundle.write(Path(scratch))
                if args.write_ca_bundle is not None:
                    updated = write_ca_bundle(args.write_ca_bundle, bundle.ca.cert_pem)
                    print(
                        f"trainyard serve: wrote caBundle into {updated} webhooks in {args.write_ca_bundle}",
                        file=sys.stderr,
                    )
                reloader = None
            else:
                files = CertificateFiles(args.tls_cert_dir)
                reloader = None
            context = server_context(files)
            if not args.self_signed:
                reloader = CertificateReloader(context, files, interval=args.reload_interval)
        except TLSError as error:
            raise UserError(str(error)) from None

        server = WebhookServer(
            cache, context, host=args.host, port=args.port, max_body_bytes=args.max_body_bytes, reloader=reloader
        )
        feed = await ClusterFeed.connect(args.kubeconfig, args.context, cache) if from_cluster else None
        controllers = (
            await Controllers.connect(args, server.metrics.registry) if args.service is None and from_cluster else None
        )
        if controllers is not None:
            # Kueue's visibility API from the engine that admits, behind TokenReview of the caller's token.
            from webhooks.visibility import VISIBILITY_KEY, VisibilityService, token_review

            server.app[VISIBILITY_KEY] = VisibilityService(
                controllers.service.queue.queue, token_review(controllers.api_client)
            )
        if args.service is None and not from_cluster:
            print(
                "trainyard serve: no cluster (--kubeconfig PATH, or a Pod): the controllers do not run, "
                "only the webhook",
                file=sys.stderr,
            )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        try:
            try:
                await server.start()
            except OSError as error:
                raise UserError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") from None
            print(f"trainyard serve: admission webhook on https://{args.host}:{server.port}", file=sys.stderr)
            if feed is not None:
                feed.start(stop)
            if controllers is not None:
                controllers.start(stop)
            await stop.wait()
            codes = [part.exit_code() for part in (feed, controllers) if part is not None]
            return max(codes, default=0)
        finally:
            print("trainyard serve: shutting down", file=sys.stderr)
            if controllers is not None:
                await controllers.close()
            if feed is not None:
                await feed.close()
            await server.stop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)


class ClusterFeed:
    """Informers for every kind the webhook caches, from a kubeconfig or the in-cluster config."""

    def __init__(self, api_client: ApiClient, group: InformerGroup, source: str) -> None:
        self.api_client = api_client
        self.group = group
        self.source = source
        self.task: asyncio.Task[None] | None = None
        self.synced_task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, kubeconfig: Path | None, context: str | None, cache: ObjectCache) -> ClusterFeed:
        from scheduler.kube import InformerGroup, KubeClient, KubeConfigError, load_api_client
        from webhooks.objects import CACHED_KINDS

        try:
            api_client = await load_api_client(kubeconfig, context=context)
        except KubeConfigError as error:
            raise UserError(str(error)) from None
        kinds = [*CACHED_KINDS, "Namespace"]
        group = InformerGroup(KubeClient(api_client), kinds, cache)
        source = str(kubeconfig) if kubeconfig is not None else "the in-cluster service account"
        print(f"trainyard serve: watching {', '.join(kinds)} through {source}", file=sys.stderr)
        return cls(api_client, group, source)

    def start(self, stop: asyncio.Event) -> None:
        self.task = asyncio.create_task(self.group.run(), name="webhook-informers")
        # The informers retry every API error themselves; if they stop anyway, so does the service.
        self.task.add_done_callback(lambda task: stop.set())

        async def report_synced() -> None:
            await self.group.synced.wait()
            print(f"trainyard serve: cache synced from {self.source}; ready", file=sys.stderr)

        self.synced_task = asyncio.create_task(report_synced(), name="webhook-informers-synced")

    def exit_code(self) -> int:
        if self.task is None or not self.task.done() or self.task.cancelled():
            return 0
        error = self.task.exception()
        if error is None:
            return 0
        print(f"trainyard serve: the cluster informers stopped: {error!r}", file=sys.stderr)
        return 1

    async def close(self) -> None:
        for task in (self.task, self.synced_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.api_client.close()


async def _serve_controller_alone(args: argparse.Namespace) -> int:
    """The controllers without the webhook, with /metrics, /healthz and /readyz over plain HTTP."""
    import signal

    from aiohttp import web
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    controllers = await Controllers.connect(args, registry)
    stop = asyncio.Event()

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        if controllers.service.manager.cache.synced.is_set():
            return web.Response(text="ok")
        unsynced = ", ".join(controllers.service.manager.unsynced())
        return web.Response(status=503, text=f"informers not synced: {unsynced}")

    app = web.Application()
    app.add_routes([web.get("/metrics", metrics), web.get("/healthz", healthz), web.get("/readyz", readyz)])
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        site = web.TCPSite(runner, args.host, args.metrics_port)
        try:
            await site.start()
        except OSError as error:
            raise UserError(f"cannot listen on {args.host}:{args.metrics_port}: {error.strerror}") from None
        port = runner.addresses[0][1] if runner.addresses else args.metrics_port
        print(f"trainyard serve: controller metrics on http://{args.host}:{port}/metrics", file=sys.stderr)
        controllers.start(stop)
        await stop.wait()
        return controllers.exit_code()
    finally:
        print("trainyard serve: shutting down", file=sys.stderr)
        await controllers.close()
        await runner.cleanup()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


class Controllers:
    """The controller service (queue controller, launcher, ungater) on its own API connection."""

    def __init__(self, api_client: ApiClient, service: ControllerService, source: str) -> None:
        self.api_client = api_client
        self.service = service
        self.source = source
        self.task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, args: argparse.Namespace, registry: CollectorRegistry) -> Controllers:
        from scheduler.controllers.service import build_controller_service
        from scheduler.engine import EngineConfig
        from scheduler.engine.config import WaitForPodsReady
        from scheduler.kube import KubeClient, KubeConfigError, load_api_client, running_in_cluster

        if args.kubeconfig is None and not running_in_cluster():
            raise UserError("the controllers need a cluster: pass --kubeconfig PATH (or run in a Pod)")
        if args.wait_for_pods_ready is not None and args.wait_for_pods_ready <= 0:
            raise UserError(f"--wait-for-pods-ready {args.wait_for_pods_ready:g} must be a positive number of seconds")
        try:
            api_client = await load_api_client(args.kubeconfig, context=args.context)
        except KubeConfigError as error:
            raise UserError(str(error)) from None
        wait = WaitForPodsReady(timeout_seconds=args.wait_for_pods_ready) if args.wait_for_pods_ready else None
        service = build_controller_service(
            KubeClient(api_client),
            launcher_mode=args.launcher,
            leader_elect=args.leader_elect,
            lease_namespace=args.lease_namespace,
            identity=args.identity,
            config=EngineConfig(wait_for_pods_ready=wait),
            registry=registry,
        )
        source = str(args.kubeconfig) if args.kubeconfig is not None else "the in-cluster service account"
        leader = service.leader
        election = (
            f"leader election on Lease {leader.namespace}/{leader.name} as {leader.identity}"
            if leader is not None
            else "no leader election"
        )
        print(f"trainyard serve: controllers (launcher {args.launcher}) through {source}, {election}", file=sys.stderr)
        return cls(api_client, service, source)

    def start(self, stop: asyncio.Event) -> None:
        self.task = asyncio.create_task(self.service.manager.run(), name="controllers")
        self.task.add_done_callback(lambda task: stop.set())

    def exit_code(self) -> int:
        if self.task is None or not self.task.done() or self.task.cancelled():
            return 0
        error = self.task.exception()
        if error is None:
            return 0
        print(f"trainyard serve: the controllers stopped: {error!r}", file=sys.stderr)
        return 1

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self.api_client.close()
