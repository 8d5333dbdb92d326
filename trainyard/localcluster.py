"""A whole trainyard installation in one process, on loopback: for benchmarks, the demo and tests.

``LocalCluster`` starts the sandbox API server (``simulations.sandbox.apiserver``), seeds it
with objects, writes a kubeconfig for it and opens a kubernetes-asyncio client on it; then
``start_controllers()`` runs trainyard's real controller service (``scheduler.controllers``)
against it over HTTP, exactly as ``trainyard serve controller --kubeconfig`` would, and
``start_standins()`` the stand-ins for the JobSet and Job controllers, the scheduler's binder
and the kubelet. Controllers can be stopped at any await point and started again, as a
replica that is killed and restarted would be.

It lives in the CLI package because it wires the layers together: the sandbox (simulations)
and the controllers (scheduler).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s_client

from scheduler.controllers.launcher import LauncherMode
from scheduler.controllers.service import ControllerService, build_controller_service
from scheduler.engine import EngineConfig
from scheduler.kube import InformerSettings, KubeClient, LeaseSettings, load_api_client
from scheduler.kube.backoff import Backoff
from simulations.sandbox.apiserver import FakeApiServer
from simulations.sandbox.standins import Standins

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"

# A local server answers in microseconds: short watches and quick retries, so a dropped watch
# or an injected error costs milliseconds, not the production defaults' seconds.
LOCAL_INFORMERS = InformerSettings(watch_timeout_seconds=60, inactivity_timeout=70.0, backoff=Backoff(0.01, 0.5))
LOCAL_LEASE = LeaseSettings(lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)


def builtin_runtime(name: str = "torch_distributed") -> dict[str, Any]:
    """One of the bundled ClusterTrainingRuntimes (manifests/runtimes/NAME.yaml) as a document."""
    document = yaml.safe_load((MANIFESTS / "runtimes" / f"{name}.yaml").read_text())
    if not isinstance(document, dict):
        raise ValueError(f"manifests/runtimes/{name}.yaml holds no single object")
    return document


@dataclass
class RunningControllers:
    """One controller replica: its service and the task running it."""

    service: ControllerService
    task: asyncio.Task[None]
    api_client: k8s_client.ApiClient

    async def stop(self) -> None:
        """Kill it wherever it is (cancellation at its current await), then close its connections."""
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self.api_client.close()


class LocalCluster:
    """``async with LocalCluster(objects) as cluster:`` — a seeded API server and a client for it."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), *, workdir: Path | None = None) -> None:
        self.server = FakeApiServer()
        self._objects = [dict(o) for o in objects]
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._workdir = workdir
        self.kubeconfig = Path()
        self._api_client: k8s_client.ApiClient | None = None
        self._replicas: list[RunningControllers] = []
        self._standins: Standins | None = None

    @property
    def client(self) -> KubeClient:
        if self._api_client is None:
            raise RuntimeError("the local cluster is not started: use `async with LocalCluster(...)`")
        return KubeClient(self._api_client)

    async def __aenter__(self) -> LocalCluster:
        await self.server.start()
        if self._workdir is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="trainyard-local-")
            self._workdir = Path(self._tempdir.name)
        self.kubeconfig = self.server.write_kubeconfig(self._workdir / "kubeconfig")
        for document in self._objects:
            self.server.seed(document)
        self._api_client = await load_api_client(self.kubeconfig)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for replica in list(self._replicas):
            await replica.stop()
        self._replicas.clear()
        if self._standins is not None:
            await self._standins.stop()
            self._standins = None
        if self._api_client is not None:
            await self._api_client.close()
            self._api_client = None
        await self.server.stop()
        if self._tempdir is not None:
            self._tempdir.cleanup()

    async def start_controllers(
        self,
        *,
        launcher_mode: LauncherMode = "jobset",
        leader_elect: bool = False,
        identity: str = "local-0",
        config: EngineConfig | None = None,
        workers: int = 4,
    ) -> RunningControllers:
        """A controller replica with its own connections, cache and engine (as a new process has)."""
        api_client = await load_api_client(self.kubeconfig)
        service = build_controller_service(
            KubeClient(api_client),
            launcher_mode=launcher_mode,
            leader_elect=leader_elect,
            lease_namespace="default",
            identity=identity,
            config=config,
            lease_settings=LOCAL_LEASE,
            informer_settings=LOCAL_INFORMERS,
            workers=workers,
        )
        replica = RunningControllers(service, asyncio.create_task(service.manager.run(), name=identity), api_client)
        self._replicas.append(replica)
        return replica

    async def restart(self, replica: RunningControllers, **options: Any) -> RunningControllers:
        """Kill ``replica`` and start a fresh one in its place."""
        await replica.stop()
        self._replicas.remove(replica)
        return await self.start_controllers(**options)

    async def start_standins(self, *, run_seconds: float = 1.0, start_seconds: float = 0.0) -> Standins:
        """The JobSet and Job controllers, binder and pod runner a cluster would run."""
        if self._standins is None:
            self._standins = Standins(self.client, run_seconds=run_seconds, start_seconds=start_seconds)
            self._standins.start()
            await self._standins.synced()
        return self._standins
