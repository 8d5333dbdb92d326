"""Helpers for the queue controller tests: a small cluster on the fake API server, a controller
process (manager + queue controllers) that can be started and killed, and an independent reader
(the official synchronous ``kubernetes`` client, through asyncio.to_thread)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import yaml
from builders import (
    ClusterQueueBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    TopologyBuilder,
    WorkloadBuilder,
    namespace,
    node,
    priority_class,
)
from builders import trainjob as build_trainjob
from fakeapi.fixtures import FakeApi

from sandbox.apiserver.records import StoredEvent
from scheduler.controllers.manager import ControllerManager
from scheduler.controllers.queueing.wiring import QUEUE_WATCHES, QueueControllers, build_queue_controllers
from scheduler.engine import EngineConfig
from scheduler.kube import InformerSettings, KubeClient, KubeKind, LeaderElector, LeaseSettings
from scheduler.kube.backoff import Backoff
from scheduler.kube.kinds import kind_named

ROOT = Path(__file__).resolve().parents[2]
FAST_INFORMERS = InformerSettings(watch_timeout_seconds=30, inactivity_timeout=30.0, backoff=Backoff(0.01, 0.05))
FAST_LEASE = LeaseSettings(lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)
NS = "team-a"
KUEUE = "kueue.x-k8s.io/v1beta2"


def runtime_doc() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "manifests/runtimes/torch_distributed.yaml").read_text()))


PRIORITIES = (("low", 10), ("high", 1000))
BLOCK = "network.topology.nvidia.com/block"
HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"


def cluster_queue_doc(
    name: str,
    cpu: int,
    *,
    preemption: str = "Never",
    cohort: str | None = None,
    stop: str | None = None,
) -> dict[str, Any]:
    """A ClusterQueue with ``cpu`` nominal on the ``default`` flavor."""
    builder = ClusterQueueBuilder(name).quota("default", "cpu", cpu).spec(preemption={"withinClusterQueue": preemption})
    if cohort is not None:
        builder.cohort(cohort)
    if stop is not None:
        builder.stop_policy(stop)
    return builder.doc()


def local_queue_doc(name: str, cluster_queue: str, stop: str = "None") -> dict[str, Any]:
    return LocalQueueBuilder(name, NS).cluster_queue(cluster_queue).stop_policy(stop).doc()


def seed_basics(fake_api: FakeApi, *, tas: bool = False) -> None:
    """The namespace, two priority classes, and the torch runtime with the ``default`` flavor or,
    with ``tas``, the Topology and the ``tas`` flavor (gangs there are Workloads: no runtime)."""
    seed = fake_api.server.seed
    seed(namespace(NS))
    if tas:
        seed(TopologyBuilder("fabric", BLOCK, HOSTNAME).doc())
        seed(ResourceFlavorBuilder("tas").node_labels(pool="gpu").topology("fabric").doc())
    else:
        seed(runtime_doc())
        seed(ResourceFlavorBuilder("default").doc())
    for name, value in PRIORITIES:
        seed(priority_class(name, value).to_dict())


def seed_queues(fake_api: FakeApi, *, cpu: int = 4, preemption: str = "Never", cluster_queue: str = "cq") -> None:
    seed_basics(fake_api)
    fake_api.server.seed(cluster_queue_doc(cluster_queue, cpu, preemption=preemption))
    fake_api.server.seed(local_queue_doc("lq", cluster_queue))


def tas_cluster_queue_doc(name: str, *, preemption: str = "Never") -> dict[str, Any]:
    """A ClusterQueue of its own (no cohort) with ample quota on the TAS flavor: nodes run out first."""
    builder = ClusterQueueBuilder(name).quota("tas", "cpu", 128).quota("tas", GPU, 64)
    return builder.spec(preemption={"withinClusterQueue": preemption}).doc()


def gpu_node(name: str, block: str = "block-0") -> dict[str, Any]:
    """A Ready 8-GPU host of the TAS flavor."""
    labels = {BLOCK: block, "pool": "gpu"}
    return node(name, hostname=True, labels=labels, cpu="32", memory="256Gi", nvidia_com_gpu="8", pods="110")


def trainjob(
    name: str, *, nodes: int = 1, cpu: int = 1, priority: str | None = None, suspend: bool = True
) -> dict[str, Any]:
    """A TrainJob in the LocalQueue ``lq`` asking ``cpu`` a node."""
    requests = {"cpu": str(cpu)}
    return build_trainjob(
        name, NS, nodes=nodes, requests=requests, queue="lq", priority_class=priority, suspend=suspend
    )


def whole_host_gang(name: str, *, hosts: int = 2, queue: str = "lq", priority: str | None = None) -> dict[str, Any]:
    """``hosts`` whole 8-GPU hosts required to share one block, as a Workload (the queue controller
    needs no TrainJob)."""
    builder = WorkloadBuilder(name, NS).queue(queue)
    if priority is not None:
        builder.priority_class(priority).priority(dict(PRIORITIES)[priority])
    builder.pod_set(count=hosts, name="node", required_topology=BLOCK, cpu="8", nvidia_com_gpu="8")
    return builder.doc()


def queued(name: str, queue: str, cpu: int, priority: str) -> dict[str, Any]:
    """A TrainJob in the LocalQueue ``queue``."""
    document = trainjob(name, cpu=cpu, priority=priority)
    document["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue
    return document


class PatchHook(KubeClient):
    """A client that awaits ``before_patch`` ahead of every patch: tests hold or time writes there."""

    def __init__(self, client: KubeClient) -> None:
        super().__init__(client.api_client)

    async def before_patch(self, kind: str, name: str, patch: Any, *, status: bool) -> None:
        """Runs before each patch is sent (``kind`` as a name: "Workload"); nothing by default."""

    async def patch(
        self,
        kind: str | KubeKind,
        name: str,
        patch: dict[str, Any] | list[dict[str, Any]],
        namespace: str | None = None,
        *,
        status: bool = False,
    ) -> dict[str, Any]:
        await self.before_patch(kind_named(kind).kind, name, patch, status=status)
        return await super().patch(kind, name, patch, namespace, status=status)


class CommittedUsage:
    """Admitted cpu after every committed Workload write, read from the store (no watch to stall)."""

    def __init__(self) -> None:
        self.holding: dict[str, int] = {}
        self.peak = 0

    def observe(self, event: StoredEvent) -> None:
        if event.rtype.kind != "Workload":
            return
        name = str(event.obj["metadata"]["name"])
        admission = (event.obj.get("status") or {}).get("admission")
        self.holding.pop(name, None)
        if event.type != "DELETED" and admission:
            self.holding[name] = sum(int(a["resourceUsage"]["cpu"]) for a in admission["podSetAssignments"])
        self.peak = max(self.peak, sum(self.holding.values()))


def stall_workload_watches(fake_api: FakeApi) -> int:
    """Stop every open Workload watch from delivering (the cache falls behind); how many."""
    stalled = 0
    for subscription in fake_api.server.store.subscriptions:
        if subscription.rtype.kind == "Workload":
            subscription.stalled = True
            stalled += 1
    return stalled


@dataclass
class ControllerProcess:
    manager: ControllerManager
    built: QueueControllers
    task: asyncio.Task[None]

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


@contextlib.asynccontextmanager
async def kube(fake_api: FakeApi) -> AsyncIterator[KubeClient]:
    api_client = await fake_api.api_client()
    try:
        yield KubeClient(api_client)
    finally:
        await api_client.close()


def start_controller(
    client: KubeClient,
    *,
    identity: str | None = None,
    config: EngineConfig | None = None,
    events: bool = True,
) -> ControllerProcess:
    leader = (
        LeaderElector(client, "trainyard-controller", "default", identity, settings=FAST_LEASE)
        if identity is not None
        else None
    )
    manager = ControllerManager(client, QUEUE_WATCHES, leader=leader, informer_settings=FAST_INFORMERS)
    built = build_queue_controllers(client, manager.cache, config=config, events=events, workers=2, debounce=0.02)
    for controller, enqueue in built.registrations:
        manager.add(controller, enqueue=enqueue)
    return ControllerProcess(manager, built, asyncio.create_task(manager.run()))


@contextlib.asynccontextmanager
async def controller(client: KubeClient, **kwargs: Any) -> AsyncIterator[ControllerProcess]:
    process = start_controller(client, **kwargs)
    try:
        yield process
    finally:
        await process.stop()


class Reader:
    """The official synchronous client, a second and independent way to read the server."""

    def __init__(self, fake_api: FakeApi) -> None:
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(fake_api.kubeconfig), client_configuration=configuration
        )
        self.api = kubernetes.client.ApiClient(configuration)
        self.custom = kubernetes.client.CustomObjectsApi(self.api)
        self.core = kubernetes.client.CoreV1Api(self.api)

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]

    async def workloads(self) -> list[dict[str, Any]]:
        answer: Any = await asyncio.to_thread(
            self.custom.list_namespaced_custom_object, "kueue.x-k8s.io", "v1beta2", NS, "workloads"
        )
        return list(answer["items"])

    async def workload_of(self, trainjob_name: str) -> dict[str, Any] | None:
        for workload in await self.workloads():
            owners = workload["metadata"].get("ownerReferences") or []
            if any(o.get("name") == trainjob_name and o.get("kind") == "TrainJob" for o in owners):
                return workload
        return None

    async def trainjob(self, name: str) -> dict[str, Any]:
        answer: Any = await asyncio.to_thread(
            self.custom.get_namespaced_custom_object, "trainer.kubeflow.org", "v1alpha1", NS, "trainjobs", name
        )
        return dict(answer)

    async def events(self) -> list[Any]:
        answer: Any = await asyncio.to_thread(self.core.list_namespaced_event, NS)
        return list(answer.items)


def condition(document: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    if document is None:
        return None
    return next((c for c in (document.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def is_admitted(document: dict[str, Any] | None) -> bool:
    c = condition(document, "Admitted")
    return bool(document and (document.get("status") or {}).get("admission") and c and c["status"] == "True")
