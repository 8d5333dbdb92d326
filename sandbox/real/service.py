"""The whole trainyard service on a real cluster of processes: ``trainyard sandbox up --real``.

``RealSandbox`` has the embedded ``Sandbox``'s surface (``kubeconfig_path``, ``url``,
``client()``, ``api_client()``, ``objects``, ``scenario``, ``start()``/``stop()``) over a
``RealCluster``: it seeds the scenario's Namespaces, KWOK Nodes and Stages and Kueue objects and
the bundled ClusterTrainingRuntimes by server-side apply, installs trainyard from
manifests/install (Namespace, ServiceAccount, RBAC), starts trainyard's webhook on loopback and
registers manifests/webhook's configurations with its CA, and runs trainyard's controllers with
a token of trainyard's own ServiceAccount, so they hold only the rights the manifests grant.

With ``kueue=True`` (``sandbox up --real --kueue``) real Kueue admits and trainyard runs beside it
as its topology AdmissionCheck's controller, installed from manifests/beside-kueue; the scenario's
flavors hand their Topology to a check of trainyard's (``beside_kueue_documents``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes_asyncio import client as k8s_client

from scheduler.controllers.admission_check.beside_kueue import build_beside_kueue_service
from scheduler.controllers.launcher.reconciler import LauncherMode
from scheduler.controllers.service import build_controller_service
from scheduler.engine import EngineConfig
from scheduler.kube import InformerSettings, KubeClient, close_api_client, load_api_client
from scheduler.kube.backoff import Backoff
from simulations.scenarios import Scenario

from ..embedded import bundled_runtimes, scenario_engine_config
from ..scenario_objects import scenario_objects
from ..service_webhook import SandboxWebhook
from .binaries import ClusterTools
from .control_plane import MANIFESTS, RealCluster, RealClusterSettings
from .install import service_account_kubeconfig, service_documents, webhook_configurations

# The real server's watch cache makes short watches cheap; these match the embedded sandbox's.
REAL_INFORMERS = InformerSettings(watch_timeout_seconds=60, inactivity_timeout=70.0, backoff=Backoff(0.05, 1.0))
BESIDE_KUEUE = MANIFESTS / "beside-kueue"
CHECK_PREFIX = "trainyard-topology"  # manifests/beside-kueue's check (hosts); one more per Topology


def beside_kueue_documents(documents: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The scenario for Kueue with trainyard's topology check: each flavor's ``topologyName`` moves
    to a check of trainyard's naming that Topology (else Kueue's own TAS would place the flavor),
    and every ClusterQueue names the checks of its flavors (``admissionChecksStrategy``)."""
    copied = [copy.deepcopy(dict(d)) for d in documents]
    check_of: dict[str, str] = {}  # flavor -> check
    checks: dict[str, dict[str, Any]] = {}
    for flavor in (d for d in copied if d.get("kind") == "ResourceFlavor"):
        topology = (flavor.get("spec") or {}).pop("topologyName", None)
        check_of[flavor["metadata"]["name"]] = name = f"{CHECK_PREFIX}-{topology}" if topology else CHECK_PREFIX
        if topology:
            parameters = {"apiGroup": "kueue.x-k8s.io", "kind": "Topology", "name": topology}
            spec = {"controllerName": "trainyard.io/topology", "parameters": parameters}
            checks[name] = {"apiVersion": flavor["apiVersion"], "kind": "AdmissionCheck", "metadata": {"name": name}}
            checks[name]["spec"] = spec
    for queue in (d for d in copied if d.get("kind") == "ClusterQueue"):
        on: dict[str, list[str]] = {}
        for group in queue["spec"].get("resourceGroups") or ():
            for flavor in group.get("flavors") or ():
                on.setdefault(check_of.get(flavor["name"], CHECK_PREFIX), []).append(flavor["name"])
        rules = [{"name": check, "onFlavors": flavors} for check, flavors in sorted(on.items())]
        queue["spec"]["admissionChecksStrategy"] = {"admissionChecks": rules}
    return [*checks.values(), *copied]


def scaled_stage(document: Mapping[str, Any], speedup: float) -> dict[str, Any]:
    """A KWOK Stage with its fixed delays divided by ``speedup`` (delays read from objects stay)."""
    stage = copy.deepcopy(dict(document))
    delay = (stage.get("spec") or {}).get("delay")
    if delay:
        for key in ("durationMilliseconds", "jitterDurationMilliseconds"):
            if key in delay:
                delay[key] = int(delay[key] / speedup)
    return stage


class RealSandbox:
    """``async with RealSandbox(scenario) as sb:`` — trainyard on real Kubernetes components."""

    def __init__(
        self,
        scenario: Scenario | str | Path | None = None,
        *,
        speedup: float = 1.0,
        port: int = 0,
        kubeconfig_out: Path | None = None,
        binaries: Path | None = None,
        webhook: bool = True,
        controllers: bool = True,
        launcher_mode: LauncherMode = "jobset",
        engine_config: EngineConfig | None = None,
        extra_objects: Iterable[Mapping[str, Any]] = (),
        settings: RealClusterSettings | None = None,
        kueue: bool = False,
    ) -> None:
        if speedup <= 0:
            raise ValueError(f"speedup must be positive, got {speedup}")
        self.objects = scenario_objects(scenario)
        self.scenario = self.objects.scenario
        self.speedup = speedup
        self.tools = ClusterTools.locate(binaries)
        base = settings or RealClusterSettings()
        self.kueue = kueue  # real Kueue admits, trainyard is its topology check
        self.cluster = RealCluster(
            self.tools,
            RealClusterSettings(**{**base.__dict__, "port": port or base.port, "kueue": kueue or base.kueue}),
        )
        self._kubeconfig_out = kubeconfig_out
        self._extra = [dict(o) for o in extra_objects]
        self._parts = {"webhook": webhook, "controllers": controllers}
        self.launcher_mode: LauncherMode = launcher_mode
        self.engine_config = engine_config or scenario_engine_config(self.scenario)
        self.webhook: SandboxWebhook | None = None
        self.service_kubeconfig = Path()
        self._api_clients: list[k8s_client.ApiClient] = []
        self._shared: k8s_client.ApiClient | None = None
        self._controllers: asyncio.Task[None] | None = None
        self._controller_client: k8s_client.ApiClient | None = None

    # ------------------------------------------------------------------------------ access

    @property
    def kubeconfig_path(self) -> Path:
        return self._kubeconfig_out or self.cluster.kubeconfig("admin")

    @property
    def url(self) -> str:
        return self.cluster.url

    def client(self) -> KubeClient:
        if self._shared is None:
            raise RuntimeError("the real sandbox is not started")
        return KubeClient(self._shared)

    async def api_client(self) -> k8s_client.ApiClient:
        api = await load_api_client(self.kubeconfig_path)
        self._api_clients.append(api)
        return api

    # --------------------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> RealSandbox:
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
        await asyncio.to_thread(self.cluster.start)
        if self._kubeconfig_out is not None:
            shutil.copyfile(self.cluster.kubeconfig("admin"), self._kubeconfig_out)
            self._kubeconfig_out.chmod(0o600)
        await asyncio.to_thread(self._seed)
        self.service_kubeconfig = await asyncio.to_thread(
            service_account_kubeconfig,
            self.cluster.admin,
            self.cluster.workdir / "trainyard.kubeconfig",
            self.cluster.url,
            self.cluster.admin_ca_pem,
        )
        self._shared = await load_api_client(self.kubeconfig_path)
        if self._parts["webhook"]:
            self.webhook = SandboxWebhook(self.service_kubeconfig, REAL_INFORMERS)
            await self.webhook.start()
            for document in webhook_configurations(self.webhook.port, self.webhook.ca_pem):
                await asyncio.to_thread(self.cluster.admin.apply, document)
        if self._parts["controllers"]:
            await self.start_controllers()

    async def start_controllers(self, identity: str = "real-0") -> None:
        self._controller_client = await load_api_client(self.service_kubeconfig)
        if self.kueue:
            beside = build_beside_kueue_service(
                KubeClient(self._controller_client), leader_elect=False, informer_settings=REAL_INFORMERS
            )
            self._controllers = asyncio.create_task(beside.manager.run(), name=identity)
            return
        service = build_controller_service(
            KubeClient(self._controller_client),
            launcher_mode=self.launcher_mode,
            leader_elect=False,
            lease_namespace="trainyard-system",
            identity=identity,
            config=self.engine_config,
            informer_settings=REAL_INFORMERS,
        )
        self._controllers = asyncio.create_task(service.manager.run(), name=identity)

    def _seed(self) -> None:
        admin = self.cluster.admin
        for document in service_documents(BESIDE_KUEUE) if self.kueue else service_documents():
            admin.apply(document)
        scenario = beside_kueue_documents(self.objects.documents) if self.kueue else self.objects.documents
        for document in [*scenario, *bundled_runtimes(), *self._extra]:
            if document.get("kind") == "Stage":
                document = scaled_stage(document, self.speedup)
            admin.apply(document)

    async def stop(self) -> None:
        if self._controllers is not None:
            self._controllers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._controllers
            self._controllers = None
        if self._controller_client is not None:
            await self._controller_client.close()
            self._controller_client = None
        if self.webhook is not None:
            await self.webhook.stop()
            self.webhook = None
        for api in self._api_clients:
            await api.close()
        self._api_clients.clear()
        if self._shared is not None:
            await close_api_client(self._shared)
            self._shared = None
        await asyncio.to_thread(self.cluster.stop)
