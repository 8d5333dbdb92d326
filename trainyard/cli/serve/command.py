"""`trainyard serve [webhook|controller]`: run trainyard's cluster services.

``webhook`` is the admission webhook (HTTPS, AdmissionReview v1); ``controller`` the controllers
(queue controller, launcher, pod ungater) behind leader election on a Lease, so with several
replicas exactly one admits while the webhook serves on all. ``--mode admission-check`` runs
trainyard beside Kueue: the topology AdmissionCheck's controller instead of the queue controller,
and a webhook that leaves the queue-name label to Kueue's. `trainyard serve` without a name
runs both in one asyncio process; their metrics share the webhook's /metrics.

The webhook's object cache is fed from a directory of YAML (``--objects DIR``) or from a cluster:
``--kubeconfig PATH``, or the Pod's service account when it runs in a cluster with neither flag.
From a cluster, one informer per cached kind mirrors it, and /readyz says ready only once every
kind has been listed. With the controllers, the same port serves Kueue's visibility API, for the
aggregator (``--requestheader-client-ca-file``) and for bearer tokens.

This module holds the command line; ``admission_webhook`` runs the webhook (and the controllers
beside it), ``controllers_alone`` the controllers alone, ``cluster_connections`` their
connections to a cluster.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from trainyard.cli.errors import UserError
from trainyard.event_loop import run_server

SERVICES = ("webhook", "controller")
LOG_LEVELS = ("debug", "info", "warning", "error")
LAUNCHER_MODES = ("jobset", "trainer")
MODES = ("standalone", "admission-check")


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
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="what goes to stderr: 'info' (default) adds what the controllers did and undid to warnings "
        "and errors; 'debug' adds every request served",
    )
    _tls_flags(parser)
    _source_flags(parser)
    _visibility_flags(parser)
    _controller_flags(parser)
    _mode_flags(parser)
    _dashboard_flags(parser)


def _mode_flags(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_argument_group("beside Kueue")
    mode.add_argument(
        "--mode",
        choices=MODES,
        default="standalone",
        help="'standalone' (default): trainyard's queue controller admits TrainJobs, Kueue is not installed; "
        "'admission-check': Kueue admits and trainyard is the controller of its AdmissionChecks of "
        "controllerName trainyard.io/topology (gang placement on the topology graph; no queue controller)",
    )
    mode.add_argument(
        "--default-queue-label",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write the queue-name label from the namespace's LocalQueue 'default' on TrainJob CREATE "
        "(default: on standalone, off beside Kueue, whose own webhook writes it)",
    )
    mode.add_argument(
        "--check-retry-seconds",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="with --mode admission-check: a gang that does not fit now is answered Retry, and Kueue requeues "
        "it after this many seconds, doubled with each retry up to 300 (default 10)",
    )


def _dashboard_flags(parser: argparse.ArgumentParser) -> None:
    dashboard = parser.add_argument_group("dashboard (with the controllers)")
    dashboard.add_argument(
        "--dashboard-port",
        type=int,
        metavar="N",
        help="serve the web dashboard (HTTP) on this port from the controllers' cache and engine (default: off)",
    )
    dashboard.add_argument(
        "--dashboard-host",
        default="127.0.0.1",
        help="address of the dashboard (default 127.0.0.1; in a Pod 0.0.0.0 behind the cluster's authenticating proxy)",
    )
    dashboard.add_argument(
        "--dashboard-allow-set-quota",
        action="store_true",
        help="let the dashboard change ClusterQueue quotas (checked as `trainyard queues set-quota`)",
    )


def _tls_flags(parser: argparse.ArgumentParser) -> None:
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument(
        "--tls-cert-dir",
        type=Path,
        metavar="DIR",
        help="directory with tls.crt and tls.key (a mounted cert-manager Secret); reloaded when they change",
    )
    tls.add_argument("--self-signed", action="store_true", help="generate a CA and a serving certificate at start")
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
        "--reload-interval", type=float, default=10.0, help="seconds between checks of --tls-cert-dir files"
    )
    parser.add_argument(
        "--max-body-bytes", type=int, default=3 * 1024 * 1024, help="largest request body accepted (default 3 MiB)"
    )


def _source_flags(parser: argparse.ArgumentParser) -> None:
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
        "--strict",
        action="store_true",
        help="with --objects: an unknown field is an error, not a warning (as kubectl's field validation Strict)",
    )


def _visibility_flags(parser: argparse.ArgumentParser) -> None:
    visibility = parser.add_argument_group("visibility API (with the controllers)")
    visibility.add_argument(
        "--requestheader-client-ca-file",
        type=Path,
        metavar="FILE",
        help="CA that signs the aggregator's front-proxy client certificate; requests over a connection with "
        "such a certificate are the user in X-Remote-User / X-Remote-Group (as kube-apiserver's flag)",
    )
    visibility.add_argument(
        "--requestheader-allowed-names",
        metavar="NAMES",
        help="comma-separated common names the front-proxy certificate may have (default: any the CA signed)",
    )


def _controller_flags(parser: argparse.ArgumentParser) -> None:
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


def check_mode(args: argparse.Namespace) -> None:
    """What --mode admission-check cannot run with (a UserError naming the flag and the fix)."""
    if args.mode != "admission-check":
        return
    if args.launcher != "jobset":
        raise UserError(
            "--mode admission-check runs with --launcher jobset: Kueue starts the TrainJob and trainyard builds "
            "its JobSet with the gated pods the ungater places (drop --launcher trainer)"
        )
    if args.wait_for_pods_ready is not None:
        raise UserError(
            "--wait-for-pods-ready is the queue controller's; beside Kueue set waitForPodsReady in Kueue's "
            "configuration instead"
        )
    if args.dashboard_port is not None:
        raise UserError("--dashboard-port shows trainyard's queue controller; beside Kueue it does not run")
    if not 0 < args.check_retry_seconds <= 300:
        raise UserError(f"--check-retry-seconds {args.check_retry_seconds:g} must be above 0 and at most 300")


def configure_logging(level: str) -> None:
    """Timestamped lines on stderr; a line per request served only at debug (a webhook answers
    hundreds a second)."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if level != "debug":
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def run(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    check_mode(args)
    if args.dashboard_port is not None and args.service is not None:
        raise UserError("--dashboard-port serves the controllers' queues: use it with `trainyard serve` (no SERVICE)")
    if args.dashboard_port is not None and not 0 <= args.dashboard_port <= 65535:
        raise UserError(f"--dashboard-port {args.dashboard_port} is not a TCP port; use 1-65535 (0 picks a free one)")
    if args.service == "controller":
        if args.objects is not None:
            raise UserError("'serve controller' works against a cluster: use --kubeconfig PATH or run it in a Pod")
        if args.context is not None and args.kubeconfig is None:
            raise UserError("--context needs --kubeconfig PATH")
        from trainyard.cli.serve.controllers_alone import serve_controller_alone

        return run_server(serve_controller_alone(args))
    if args.tls_cert_dir is None and not args.self_signed:
        raise UserError("choose TLS: --tls-cert-dir DIR (tls.crt, tls.key) or --self-signed")
    if args.write_ca_bundle is not None and not args.self_signed:
        raise UserError("--write-ca-bundle needs --self-signed (with --tls-cert-dir the CA is cert-manager's)")
    if args.context is not None and args.kubeconfig is None:
        raise UserError("--context needs --kubeconfig PATH")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port} is not a TCP port; use 1-65535 (0 picks a free one)")
    if args.requestheader_allowed_names is not None and args.requestheader_client_ca_file is None:
        raise UserError("--requestheader-allowed-names needs --requestheader-client-ca-file FILE")
    from trainyard.cli.serve.admission_webhook import serve_webhook

    return run_server(serve_webhook(args))
