"""`trainyard serve` as a process of its own beside a real cluster, as a Deployment's replica runs it.

``ServiceProcess`` starts the command line exactly as manifests/install's Deployment does
(``trainyard serve --launcher jobset``, leader election on a Lease in trainyard-system), with a
kubeconfig holding a token of trainyard's ServiceAccount and a serving certificate from the
cluster CA for 127.0.0.1, and waits for its ``/readyz``. Several replicas may run at once (each
with its own identity and port); killing one is a replica crashing. ``controllers_only`` runs
`trainyard serve controller` instead: the controllers alone, ``/readyz`` on a plain HTTP port.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from .control_plane import RealCluster
from .install import SERVICE_NAMESPACE, webhook_configurations
from .loopback import http_ok
from .processes import ComponentProcess, free_port, wait_until


class ServiceProcess:
    def __init__(
        self,
        cluster: RealCluster,
        kubeconfig: Path,
        *,
        identity: str,
        extra_args: Sequence[str] = (),
        controllers_only: bool = False,
    ) -> None:
        self.cluster = cluster
        self.kubeconfig = kubeconfig
        self.identity = identity
        self.extra_args = list(extra_args)
        self.controllers_only = controllers_only
        self.port = 0
        self.process: ComponentProcess | None = None

    @property
    def url(self) -> str:
        return f"{'http' if self.controllers_only else 'https'}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> ServiceProcess:
        self.port = free_port()
        if self.controllers_only:
            serving = ["controller", "--host=127.0.0.1", f"--metrics-port={self.port}"]
        else:
            cert_dir = self.cluster.loopback_certificate(self.cluster.workdir / f"{self.identity}-certs")
            serving = ["--host=127.0.0.1", f"--port={self.port}", f"--tls-cert-dir={cert_dir}"]
        command = [
            sys.executable,
            "-m",
            "trainyard",
            "serve",
            *serving,
            f"--kubeconfig={self.kubeconfig}",
            "--launcher=jobset",
            f"--lease-namespace={SERVICE_NAMESPACE}",
            f"--identity={self.identity}",
            *self.extra_args,
        ]
        self.process = ComponentProcess(self.identity, command, self.cluster.log(self.identity)).start()
        wait_until(lambda: http_ok(f"{self.url}/readyz"), timeout=timeout, what=self.identity, watch=[self.process])
        return self

    def register_webhooks(self) -> None:
        """Point manifests/webhook's configurations at this replica."""
        for document in webhook_configurations(self.port, self.cluster.admin_ca_pem):
            self.cluster.admin.apply(document)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def running(self) -> bool:
        return self.process is not None and self.process.running()
