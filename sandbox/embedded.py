"""A whole trainyard installation in one process, on loopback: for benchmarks, the demo and tests.

``LocalCluster`` starts the sandbox API server (``sandbox.apiserver``), seeds it
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

from sandbox.apiserver import FakeApiServer
from sandbox.scenario_objects import scenario_objects
from sandbox.service_webhook import WEBHOOK_SERVICE, SandboxWebhook, webhook_configurations
from sandbox.standins import Standins, fast_informers
from scheduler.controllers.launcher.reconciler import LauncherMode
from scheduler.controllers.runtime import DEFAULT_WORKERS
from scheduler.controllers.service import ControllerService, build_controller_service
from scheduler.engine import EngineConfig, WaitForPodsReady
from scheduler.kube import InformerSettings, KubeClient, LeaseSettings, close_api_client, load_api_client
from scheduler.kube.backoff import Backoff
from simulations.kwok.stage_controller import KwokStages
from simulations.scenarios import Scenario

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

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        *,
        workdir: Path | None = None,
        server: FakeApiServer | None = None,
        kubeconfig: Path | None = None,
    ) -> None:
        self.server = server or FakeApiServer()
        self._objects = [dict(o) for o in objects]
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._workdir = workdir
        self._kubeconfig_out = kubeconfig  # default: WORKDIR/kubeconfig
        self.kubeconfig = Path()
        self._api_client: k8s_client.ApiClient | None = None
        self._replicas: list[RunningControllers] = []
        self._standins: Standins | None = None
        self._webhook: SandboxWebhook | None = None

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
        self.kubeconfig = self.server.write_kubeconfig(self._kubeconfig_out or self._workdir / "kubeconfig")
        for document in self._objects:
            self.server.seed(document)
        self._api_client = await load_api_client(self.kubeconfig)
        return self

    async def stop_workers(self) -> None:
        """Stop every controller replica and the stand-ins; the server keeps serving."""
        for replica in list(self._replicas):
            await replica.stop()
        self._replicas.clear()
        if self._standins is not None:
            await self._standins.stop()
            self._standins = None

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop_workers()
        if self._webhook is not None:  # after the writers that call it through the server
            await self._webhook.stop()
            self._webhook = None
        if self._api_client is not None:
            await close_api_client(self._api_client)  # last: every writer's connections have closed
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
        workers: int = DEFAULT_WORKERS,
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

    async def start_webhook(self) -> SandboxWebhook:
        """trainyard's admission webhook on loopback, registered with manifests/webhook's configurations.

        From then on the API server calls it on every TrainJob, Workload and Kueue write those
        configurations name, as a real API server would (HTTPS, caBundle, failurePolicy).
        """
        if self._webhook is None:
            webhook = SandboxWebhook(self.kubeconfig, LOCAL_INFORMERS)
            await webhook.start()
            self._webhook = webhook
            self.server.admission.services[WEBHOOK_SERVICE] = f"127.0.0.1:{webhook.port}"
            for document in webhook_configurations(webhook.ca_pem):
                self.server.seed(document)
        return self._webhook

    async def start_standins(
        self, *, run_seconds: float = 1.0, start_seconds: float = 0.0, runner: bool = True
    ) -> Standins:
        """The JobSet and Job controllers, binder and pod runner a cluster would run.

        ``runner=False`` leaves the pods to something else (the sandbox's KWOK stages).
        """
        if self._standins is None:
            self._standins = Standins(self.client, run_seconds=run_seconds, start_seconds=start_seconds, runner=runner)
            self._standins.start()
            await self._standins.synced()
        return self._standins


# ------------------------------------------------------------------------------------ Sandbox


def bundled_runtimes() -> list[dict[str, Any]]:
    """Every ClusterTrainingRuntime in manifests/runtimes."""
    return [builtin_runtime(path.stem) for path in sorted((MANIFESTS / "runtimes").glob("*.yaml"))]


class Sandbox:
    """The whole trainyard service against a sandbox cluster, in this process, on loopback.

    Usage::

        async with Sandbox(scenario="gpu-1k", speedup=60.0) as sb:
            sb.kubeconfig_path          # a kubeconfig any client can use (HTTPS, bearer token)
            client = sb.client()        # a KubeClient on it (closed with the sandbox)
            api = await sb.api_client() # a fresh kubernetes-asyncio ApiClient; the caller closes it
            sb.server.requests          # every request the API server served (``api_requests``)

    On entry it starts the API server (HTTPS with a generated CA, bearer token), seeds the
    scenario's Namespaces, Nodes, Kueue objects and KWOK Stages (``sandbox.scenario_objects``,
    default: the small ``sandbox`` scenario) and the bundled ClusterTrainingRuntimes, starts
    trainyard's admission webhook (the real ``webhooks`` app over HTTPS, fed by informers on the
    sandbox) and registers it with manifests/webhook's configurations, then runs trainyard's
    controllers and the stand-ins (JobSet, Job, binder) and the KWOK stages that move Nodes and
    Pods. ``speedup`` divides every Stage delay (a pod whose Stage says 60 s runs 1 s at 60×).
    Each part can be left out (``webhook=False`` ...); with ``kwok=False`` the stand-ins' minimal
    pod runner (``PodRunner``) moves the pods instead, with ``standins=False`` nothing does (a
    driver that plays them itself). ``heartbeat_seconds`` is how often (wall
    clock) KWOK renews each Node's Lease (None: never; 1,000 nodes at 10 s is ~100 writes/s),
    ``seed`` seeds KWOK's choices (weights, jitter). Exit stops everything, in reverse order.

    Arguments are keyword-only after ``scenario`` and stable; new ones are added, none removed.
    """

    def __init__(
        self,
        scenario: Scenario | str | Path | None = None,
        *,
        speedup: float = 1.0,
        port: int = 0,
        kubeconfig_out: Path | None = None,
        webhook: bool = True,
        controllers: bool = True,
        standins: bool = True,
        kwok: bool = True,
        launcher_mode: LauncherMode = "jobset",
        engine_config: EngineConfig | None = None,
        extra_objects: Iterable[Mapping[str, Any]] = (),
        heartbeat_seconds: float | None = 10.0,
        seed: int = 0,
    ) -> None:
        if speedup <= 0:
            raise ValueError(f"speedup must be positive, got {speedup}")
        self.objects = scenario_objects(scenario)
        self.scenario = self.objects.scenario
        self.speedup = speedup
        self.server = FakeApiServer(port=port, tls=True, collect_dangling=True)
        documents = [*self.objects.documents, *bundled_runtimes(), *(dict(o) for o in extra_objects)]
        self.cluster = LocalCluster(documents, server=self.server, kubeconfig=kubeconfig_out)
        self._parts = {"webhook": webhook, "controllers": controllers, "standins": standins, "kwok": kwok}
        self.launcher_mode: LauncherMode = launcher_mode
        self.engine_config = engine_config or scenario_engine_config(self.scenario)
        self.webhook: SandboxWebhook | None = None
        self.kwok: KwokStages | None = None
        self.controllers: RunningControllers | None = None
        self._api_clients: list[k8s_client.ApiClient] = []
        self.heartbeat_seconds = heartbeat_seconds
        self.seed = seed

    # ------------------------------------------------------------------------------ access

    @property
    def kubeconfig_path(self) -> Path:
        return self.cluster.kubeconfig

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def api_requests(self) -> int:
        return len(self.server.requests)

    def client(self) -> KubeClient:
        """A KubeClient on the sandbox's shared connection (valid until the sandbox stops)."""
        return self.cluster.client

    async def api_client(self) -> k8s_client.ApiClient:
        """A new kubernetes-asyncio ApiClient from the kubeconfig; close it (or the sandbox does)."""
        api = await load_api_client(self.kubeconfig_path)
        self._api_clients.append(api)
        return api

    # --------------------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> Sandbox:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        await self.cluster.__aenter__()
        if self._parts["webhook"]:
            self.webhook = await self.cluster.start_webhook()
        if self._parts["standins"]:
            await self.cluster.start_standins(runner=not self._parts["kwok"])
        if self._parts["kwok"]:
            self.kwok = KwokStages(
                self.client(),
                self.objects.stages,
                speedup=self.speedup,
                seed=self.seed,
                heartbeat_seconds=self.heartbeat_seconds,
                informer_settings=fast_informers(),
            )
            self.kwok.start()
            await self.kwok.synced()
        if self._parts["controllers"]:
            self.controllers = await self.cluster.start_controllers(
                launcher_mode=self.launcher_mode, config=self.engine_config, identity="sandbox-0"
            )

    async def stop(self) -> None:
        for api in self._api_clients:
            await api.close()
        self._api_clients.clear()
        # writers first, then the webhook they call through the server, then the server
        await self.cluster.stop_workers()
        self.controllers = None
        if self.kwok is not None:
            await self.kwok.stop()
            self.kwok = None
        self.webhook = None  # the cluster stops it
        await self.cluster.__aexit__(None, None, None)


def scenario_engine_config(scenario: Scenario) -> EngineConfig:
    """The engine settings the embedded simulator runs ``scenario`` with."""
    wait = WaitForPodsReady(timeout_seconds=scenario.pods_ready_timeout) if scenario.pods_ready_timeout else None
    return EngineConfig(fair_sharing=scenario.fair_sharing, wait_for_pods_ready=wait)
