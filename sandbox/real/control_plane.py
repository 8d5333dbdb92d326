"""A real Kubernetes control plane on loopback, as processes: what kwokctl's binary runtime runs.

``RealCluster`` starts etcd, kube-apiserver (HTTPS with a generated CA, static tokens, RBAC),
kube-controller-manager (the garbage collector, the Job controller, node lifecycle, ...),
kube-scheduler, the KWOK controller (fake nodes and pods moved by KWOK's own Stage objects) and
the JobSet controller, each built from its Go module (``sandbox.real.build``); their command
lines are in ``commands``. The CRDs of JobSet, Kueue, Trainer and KWOK are installed from their
modules as shipped; the PodGroup CRD of the coscheduling plugin comes from trainyard's manifests
(sigs.k8s.io/scheduler-plugins is not served by the module proxy). Webhook configurations
shipped with a Service reference are pointed at the controller's URL on loopback, as envtest
does (``loopback``).

Synchronous on purpose: pytest session fixtures and ``trainyard sandbox up --real`` bring it up
before any event loop runs. ``stop()`` (or leaving the ``with`` block) ends every process; the
children die with this process even when it is killed (``processes``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import yaml

from . import commands
from .binaries import ClusterTools
from .loopback import http_ok, webhook_to_url
from .pki import ClusterCredentials
from .processes import ComponentFailed, ComponentProcess, free_port, wait_until
from .rest import RestClient

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
POD_GROUP_CRDS = MANIFESTS / "crds" / "scheduling"
KUEUE_NAMESPACE = "kueue-system"
# Kueue v0.17 reads its metrics server's certificate from this fixed path whenever its own
# certificate management is off (cmd/kueue/main.go), even with the metrics server disabled.
KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")
# Components that answer /healthz on a port of their own, and the scheme they answer it in.
_PROBED = {"kube-controller-manager": "https", "kube-scheduler": "https", "kwok": "http"}


@dataclass(frozen=True)
class RealClusterSettings:
    """Which components run, and the knobs tests turn."""

    port: int = 0  # the API server's port on 127.0.0.1 (0: any free one)
    controller_manager: bool = True
    scheduler: bool = True
    kwok: bool = True
    jobset: bool = True
    # Kueue v0.17 as the cluster's admission controller (trainyard beside it as an AdmissionCheck
    # controller, or its decisions held to the engine's), managing these job frameworks.
    kueue: bool = False
    kueue_frameworks: tuple[str, ...] = ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob")
    # Kueue's fair sharing (v1beta2 config: a fairSharing section enables it, default strategies)
    kueue_fair_sharing: bool = False
    # How long kube-controller-manager waits for a silent node before marking it NotReady
    # (the default 40 s makes a node-failure test slow for nothing).
    node_monitor_grace_seconds: int = 10
    audit: bool = False  # an audit log of every service account's requests (commands.AUDIT_POLICY)


class RealCluster:
    """``with RealCluster(ClusterTools.locate()) as cluster:`` — a running control plane."""

    def __init__(
        self, tools: ClusterTools, settings: RealClusterSettings | None = None, *, workdir: Path | None = None
    ) -> None:
        self.tools = tools
        self.settings = settings or RealClusterSettings()
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="trainyard-real-")
            workdir = Path(self._tempdir.name)
        self.workdir = workdir
        self._credentials: ClusterCredentials | None = None
        self.processes: dict[str, ComponentProcess] = {}
        self.port = 0
        self.etcd_url = ""
        self._admin: RestClient | None = None
        self._health_ports: dict[str, int] = {}

    # ------------------------------------------------------------------------------ access

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def credentials(self) -> ClusterCredentials:
        if self._credentials is None:
            raise RuntimeError("the real cluster is not started")
        return self._credentials

    @property
    def admin(self) -> RestClient:
        if self._admin is None:
            raise RuntimeError("the real cluster is not started")
        return self._admin

    @property
    def admin_ca_pem(self) -> bytes:
        return self.credentials.ca_pem

    def kubeconfig(self, identity: str = "admin") -> Path:
        return self.credentials.kubeconfig(identity, self.url)

    def loopback_certificate(self, directory: Path) -> Path:
        return self.credentials.loopback_certificate(directory)

    @property
    def audit_log(self) -> Path:
        return self.workdir / "logs" / "audit.log"

    def log(self, name: str) -> Path:
        return self.workdir / "logs" / f"{name}.log"

    # --------------------------------------------------------------------------- lifecycle

    def __enter__(self) -> RealCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        self._credentials = ClusterCredentials.create(self.workdir / "pki")
        self._start_etcd()
        self._start_apiserver()
        self._install_crds()
        tools, settings = self.tools, self.settings
        if settings.controller_manager:
            self._spawn_probed(
                "kube-controller-manager",
                lambda port: commands.kube_controller_manager(
                    tools.binary("kube-controller-manager"),
                    self.kubeconfig("kube-controller-manager"),
                    self.credentials.path,
                    port,
                    settings.node_monitor_grace_seconds,
                ),
            )
        if settings.scheduler:
            self._spawn_probed(
                "kube-scheduler",
                lambda port: commands.kube_scheduler(
                    tools.binary("kube-scheduler"), self.kubeconfig("kube-scheduler"), port
                ),
            )
        if settings.kwok:
            grace = settings.node_monitor_grace_seconds
            self._spawn_probed(
                "kwok", lambda port: commands.kwok(tools.binary("kwok"), self.kubeconfig("kwok"), port, grace)
            )
        if settings.jobset:
            self.start_webhooked_controller("jobset", "config.jobset.x-k8s.io/v1alpha1", {})
        if settings.kueue:
            self._start_kueue()
        for name, port in self._health_ports.items():
            self._wait_healthy(name, f"{_PROBED[name]}://127.0.0.1:{port}/healthz")

    def stop(self) -> None:
        """Stop every component, the last started first, etcd last."""
        for process in reversed(list(self.processes.values())):
            process.stop()
        self.processes.clear()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def check_alive(self) -> None:
        for process in self.processes.values():
            process.check_alive()

    # -------------------------------------------------------------------------- components

    def _spawn(self, name: str, command: list[str]) -> ComponentProcess:
        process = ComponentProcess(name, command, self.log(name)).start()
        self.processes[name] = process
        return process

    def _spawn_probed(self, name: str, command_for: Callable[[int], list[str]]) -> None:
        self._health_ports[name] = port = free_port()
        self._spawn(name, command_for(port))

    def _wait_healthy(self, name: str, url: str) -> None:
        wait_until(lambda: http_ok(url), timeout=120, what=name, watch=[self.processes[name]])

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        process = self._spawn("etcd", commands.etcd(self.tools.binary("etcd"), self.workdir / "etcd", client, peer))
        wait_until(lambda: http_ok(f"{self.etcd_url}/health"), timeout=60, what="etcd", watch=[process])

    def _start_apiserver(self) -> None:
        self.port = self.settings.port or free_port()
        audit = None
        if self.settings.audit:
            policy = self.workdir / "audit-policy.yaml"
            policy.write_text(yaml.safe_dump(commands.AUDIT_POLICY))
            audit = (policy, self.audit_log)
        binary = self.tools.binary("kube-apiserver")
        command = commands.kube_apiserver(
            binary, self.credentials.path, self.etcd_url, self.port, self.workdir / "apiserver-certs", audit
        )
        process = self._spawn("kube-apiserver", command)
        admin_token = self.credentials.identities["admin"].token
        self._admin = RestClient(self.url, admin_token, self.credentials.ca_pem)
        wait_until(lambda: http_ok(f"{self.url}/readyz"), timeout=120, what="kube-apiserver", watch=[process])

    def _start_kueue(self) -> None:
        self.admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}})
        _kueue_metrics_certificate(self)
        config = {
            "namespace": KUEUE_NAMESPACE,
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": list(self.settings.kueue_frameworks)},
        }
        if self.settings.kueue_fair_sharing:
            config["fairSharing"] = {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
        # Kueue's on-demand visibility server writes certificates into /visibility: not on a machine
        # of processes (trainyard serves the visibility API in its own mode)
        gates = "--feature-gates=VisibilityOnDemand=false"
        self.start_webhooked_controller("kueue", "config.kueue.x-k8s.io/v1beta2", config, [gates])

    def start_webhooked_controller(
        self, name: str, config_api_version: str, extra_config: dict[str, object], extra_args: list[str] | None = None
    ) -> None:
        """Start a controller-runtime manager that serves its own webhooks (JobSet, Kueue), then register them.

        It gets a configuration file for loopback and the cluster CA's certificate for 127.0.0.1;
        the module's webhook configurations are registered with their Service references turned
        into that URL, once the manager is ready (before, they would refuse every write they cover).
        """
        webhook_port, health_port = free_port(), free_port()
        cert_dir = self.loopback_certificate(self.workdir / f"{name}-certs")
        config = commands.controller_runtime_config(
            config_api_version, webhook_port, health_port, cert_dir, **extra_config
        )
        config_file = self.workdir / f"{name}-config.yaml"
        config_file.write_text(yaml.safe_dump(config))
        command = [
            *commands.controller_runtime_manager(self.tools.binary(name), self.kubeconfig(name), config_file),
            *(extra_args or ()),
        ]
        process = self._spawn(name, command)
        ready = f"http://127.0.0.1:{health_port}/readyz"
        wait_until(lambda: http_ok(ready), timeout=120, what=name, watch=[process])
        for path in self.tools.webhooks(name):
            for document in yaml.safe_load_all(path.read_text()):
                if isinstance(document, dict):
                    self.admin.apply(webhook_to_url(document, name, webhook_port, self.admin_ca_pem))

    # -------------------------------------------------------------------------------- CRDs

    def _install_crds(self) -> None:
        files = [
            *self.tools.crds("jobset"),
            *self.tools.crds("kueue"),
            *self.tools.crds("trainer"),
            *self.tools.crds("kwok"),
            *sorted(POD_GROUP_CRDS.glob("*.yaml")),
        ]
        names = []
        for path in files:
            for document in yaml.safe_load_all(path.read_text()):
                if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
                    self.admin.apply(document)
                    names.append(document["metadata"]["name"])
        wait_until(lambda: all(self._established(n) for n in names), timeout=60, what="the CRDs")

    def _established(self, name: str) -> bool:
        crd = self.admin.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conditions = (crd.get("status") or {}).get("conditions") or ()
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _kueue_metrics_certificate(cluster: RealCluster) -> None:
    """A certificate where Kueue insists on reading one (left in place for later clusters)."""
    if (KUEUE_METRICS_CERTS / "tls.crt").is_file() and (KUEUE_METRICS_CERTS / "tls.key").is_file():
        return
    try:
        cluster.loopback_certificate(KUEUE_METRICS_CERTS)
    except OSError as error:
        raise ComponentFailed(
            f"Kueue v0.17 reads a certificate from {KUEUE_METRICS_CERTS} (a fixed path in cmd/kueue/main.go) "
            f"and it cannot be written here ({error}); create it as root, or run without Kueue"
        ) from None
