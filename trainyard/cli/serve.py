"""`trainyard serve [webhook]`: run trainyard's cluster services.

Today the one service is the admission webhook (HTTPS, AdmissionReview v1); `trainyard serve`
without a name runs every service, which is the webhook until the queue controllers are added.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainyard.cli.errors import UserError

SERVICES = ("webhook",)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run trainyard's cluster services. SERVICE 'webhook' is the admission webhook "
        "(/mutate/trainjobs, /validate/trainjobs, /validate/kueue, /validate/runtimes, /healthz, "
        "/readyz, /metrics over HTTPS). Without SERVICE every service runs; today that is the "
        "webhook alone (the queue controllers will join it)."
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
    parser.add_argument(
        "--objects",
        type=Path,
        metavar="DIR",
        help="directory of YAML with runtimes, Kueue queues/flavors/topologies, Namespaces and Nodes",
    )
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


def run(args: argparse.Namespace) -> int:
    import asyncio

    if args.tls_cert_dir is None and not args.self_signed:
        raise UserError("choose TLS: --tls-cert-dir DIR (tls.crt, tls.key) or --self-signed")
    if args.write_ca_bundle is not None and not args.self_signed:
        raise UserError("--write-ca-bundle needs --self-signed (with --tls-cert-dir the CA is cert-manager's)")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port} is not a TCP port; use 1-65535 (0 picks a free one)")
    asyncio.run(_serve(args))
    return 0


async def _serve(args: argparse.Namespace) -> None:
    import asyncio
    import signal
    import tempfile

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
    if args.objects is not None:
        try:
            count = load_directory(args.objects, cache)
        except ObjectFeedError as error:
            raise UserError(str(error)) from None
        print(f"trainyard serve: loaded {count} objects from {args.objects}", file=sys.stderr)
    else:
        print(
            "trainyard serve: no --objects DIR: the webhook knows no runtimes or queues, so queued "
            "TrainJobs will be refused",
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
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        try:
            await server.start()
        except OSError as error:
            raise UserError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") from None
        print(f"trainyard serve: admission webhook on https://{args.host}:{server.port}", file=sys.stderr)
        try:
            await stop.wait()
        finally:
            print("trainyard serve: shutting down", file=sys.stderr)
            await server.stop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
