"""`trainyard serve [webhook]`: the admission webhook over HTTPS, with the controllers when both run.

The webhook's object cache is fed from a directory of YAML (``--objects DIR``) or from a cluster's
informers; its TLS comes from a mounted Secret (reloaded when it changes) or is self-signed at
start. When the controllers run in the same process, the same HTTPS port serves Kueue's
visibility API from their engine, behind the aggregator's front-proxy certificate or a bearer
token (TokenReview) and a SubjectAccessReview per request.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.cli.errors import UserError
from trainyard.cli.serve.cluster_connections import ClusterFeed, Controllers, stop_on_signals

if TYPE_CHECKING:
    import ssl

    from dashboard import DashboardServer
    from scheduler.controllers.service import ControllerService
    from webhooks.handlers import Handler
    from webhooks.objects import ObjectCache
    from webhooks.tls import CertificateReloader
    from webhooks.visibility import VisibilityService


def load_objects(args: argparse.Namespace, from_cluster: bool) -> ObjectCache:
    """The webhook's cache, filled from ``--objects`` now or left for the cluster's informers."""
    from webhooks.objects import ObjectCache, ObjectFeedError, load_directory

    cache = ObjectCache()
    if args.objects is not None:
        warnings: list[str] = []
        try:
            count = load_directory(args.objects, cache, strict=getattr(args, "strict", False), warnings=warnings)
        except ObjectFeedError as error:
            raise UserError(str(error)) from None
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print(f"trainyard serve: loaded {count} objects from {args.objects}", file=sys.stderr)
    elif not from_cluster:
        print(
            "trainyard serve: neither --objects DIR nor --kubeconfig PATH (and not in a Pod): the webhook "
            "knows no runtimes or queues, so queued TrainJobs will be refused",
            file=sys.stderr,
        )
        cache.mark_loaded()
    return cache


def tls_context(args: argparse.Namespace, scratch: Path) -> tuple[ssl.SSLContext, CertificateReloader | None]:
    """The serving context (self-signed into ``scratch``, or the files in --tls-cert-dir, reloaded)."""
    from webhooks.tls import (
        CertificateFiles,
        CertificateReloader,
        TLSError,
        require_client_ca,
        self_signed,
        server_context,
        service_hosts,
        write_ca_bundle,
    )

    try:
        if args.self_signed:
            hosts = service_hosts(args.service_name, args.service_namespace)
            if args.host not in ("0.0.0.0", "::", *hosts):
                hosts.append(args.host)
            bundle = self_signed(hosts)
            context = server_context(bundle.write(scratch))
            reloader = None
            if args.write_ca_bundle is not None:
                updated = write_ca_bundle(args.write_ca_bundle, bundle.ca.cert_pem)
                print(
                    f"trainyard serve: wrote caBundle into {updated} webhooks in {args.write_ca_bundle}",
                    file=sys.stderr,
                )
        else:
            files = CertificateFiles(args.tls_cert_dir)
            context = server_context(files)
            reloader = CertificateReloader(context, files, interval=args.reload_interval)
        if args.requestheader_client_ca_file is not None:
            require_client_ca(context, args.requestheader_client_ca_file)
    except TLSError as error:
        raise UserError(str(error)) from None
    return context, reloader


async def visibility_service(
    args: argparse.Namespace, controllers: Controllers, context: ssl.SSLContext
) -> VisibilityService:
    """Kueue's visibility API from the engine that admits, guarded as an aggregated API server.

    The front proxy's CA is --requestheader-client-ca-file, else what the cluster publishes in
    kube-system/extension-apiserver-authentication (as every extension API server reads it).
    """
    from webhooks.tls import TLSError, require_client_ca
    from webhooks.visibility import VisibilityService
    from webhooks.visibility_auth import (
        Authenticator,
        FrontProxy,
        Guard,
        request_header_config,
        subject_access_review,
        token_review,
    )

    api_client = controllers.api_client
    front_proxy = None
    if args.requestheader_client_ca_file is not None:
        names = frozenset(name.strip() for name in (args.requestheader_allowed_names or "").split(",") if name.strip())
        front_proxy = FrontProxy(names)
    else:
        published = await request_header_config(api_client)
        if published is not None:
            try:
                require_client_ca(context, ca_pem=published.client_ca_pem)
            except TLSError as error:
                raise UserError(f"kube-system/extension-apiserver-authentication: {error}") from None
            front_proxy = published.front_proxy
    how = "the aggregator's front proxy or a bearer token" if front_proxy else "a bearer token (no front-proxy CA)"
    print(f"trainyard serve: visibility API on the same port, for {how}", file=sys.stderr)
    guard = Guard(Authenticator(token_review(api_client), front_proxy), subject_access_review(api_client))
    return VisibilityService(standalone_service(controllers).queue.queue, guard)


def standalone_service(controllers: Controllers) -> ControllerService:
    """The queue controller's service (what the visibility API and the dashboard read)."""
    from scheduler.controllers.service import ControllerService

    if not isinstance(controllers.service, ControllerService):
        raise UserError("beside Kueue (--mode admission-check) trainyard's queue controller does not run")
    return controllers.service


async def serve_dashboard(args: argparse.Namespace, controllers: Controllers | None) -> DashboardServer | None:
    """The web dashboard beside the webhook, from the controllers' cache and engine (--dashboard-port)."""
    if args.dashboard_port is None:
        return None
    if controllers is None:
        raise UserError("--dashboard-port needs the controllers: run `trainyard serve` against a cluster")
    from trainyard.cli.dashboard import cluster_quota_writer, controller_dashboard, start_server

    service = standalone_service(controllers)
    cache = service.manager.cache
    writer = cluster_quota_writer(args.kubeconfig, args.context, cache) if args.dashboard_allow_set_quota else None
    data = controller_dashboard(service, controllers.api_client, f"trainyard serve ({controllers.source})", writer)
    return await start_server(data, args.dashboard_host, args.dashboard_port, "trainyard serve")


def webhook_routes(args: argparse.Namespace) -> dict[str, Handler]:
    """The admission endpoints; beside Kueue the TrainJob defaulting leaves the queue-name label to
    Kueue's webhook unless --default-queue-label asks for it."""
    from webhooks.handlers import trainjobs
    from webhooks.server import default_routes

    routes = default_routes()
    default_queue = args.default_queue_label if args.default_queue_label is not None else args.mode == "standalone"
    if not default_queue:
        routes["/mutate/trainjobs"] = trainjobs.mutate_beside_kueue
    return routes


async def serve_webhook(args: argparse.Namespace) -> int:
    import tempfile

    from scheduler.kube import running_in_cluster
    from webhooks.server import WebhookServer
    from webhooks.visibility import VISIBILITY_KEY

    from_cluster = args.objects is None and (args.kubeconfig is not None or running_in_cluster())
    cache = load_objects(args, from_cluster)
    with tempfile.TemporaryDirectory(prefix="trainyard-tls-") as scratch:
        context, reloader = tls_context(args, Path(scratch))
        server = WebhookServer(
            cache,
            context,
            host=args.host,
            port=args.port,
            routes=webhook_routes(args),
            max_body_bytes=args.max_body_bytes,
            reloader=reloader,
        )
        feed = await ClusterFeed.connect(args.kubeconfig, args.context, cache) if from_cluster else None
        controllers = None
        if args.service is None and from_cluster:
            controllers = await Controllers.connect(args, server.metrics.registry)
            if args.mode == "standalone":  # beside Kueue, Kueue serves its own visibility API
                server.app[VISIBILITY_KEY] = await visibility_service(args, controllers, context)
        elif args.service is None:
            print(
                "trainyard serve: no cluster (--kubeconfig PATH, or a Pod): the controllers do not run, "
                "only the webhook",
                file=sys.stderr,
            )
        stop = asyncio.Event()
        dashboard = None
        try:
            with stop_on_signals(stop):
                try:
                    await server.start()
                except OSError as error:
                    raise UserError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") from None
                print(f"trainyard serve: admission webhook on https://{args.host}:{server.port}", file=sys.stderr)
                dashboard = await serve_dashboard(args, controllers)
                for part in (feed, controllers):
                    if part is not None:
                        part.start(stop)
                await stop.wait()
                return max((part.exit_code() for part in (feed, controllers) if part is not None), default=0)
        finally:
            print("trainyard serve: shutting down", file=sys.stderr)
            if dashboard is not None:
                await dashboard.stop()
            if controllers is not None:
                await controllers.close()
            if feed is not None:
                await feed.close()
            await server.stop()
