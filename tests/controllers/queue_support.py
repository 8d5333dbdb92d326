"""Helpers for the queue controller tests: a small cluster on the fake API server, a controller
process (manager + queue controllers) that can be started and killed, and an independent reader
(the official synchronous ``kubernetes`` client, through asyncio.to_thread)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import yaml
from fakeapi.fixtures import FakeApi

from scheduler.controllers.manager import ControllerManager
from scheduler.controllers.queueing import QUEUE_WATCHES, QueueControllers, build_queue_controllers
from scheduler.engine import EngineConfig
from scheduler.kube import InformerSettings, KubeClient, LeaderElector, LeaseSettings
from scheduler.kube.backoff import Backoff

ROOT = Path(__file__).resolve().parents[2]
FAST_INFORMERS = InformerSettings(watch_timeout_seconds=30, inactivity_timeout=30.0, backoff=Backoff(0.01, 0.05))
FAST_LEASE = LeaseSettings(lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)
NS = "team-a"
KUEUE = "kueue.x-k8s.io/v1beta2"


async def eventually(check: Callable[[], Any], timeout: float = 8.0, what: str = "condition") -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def runtime_doc() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "manifests/runtimes/torch_distributed.yaml").read_text()))


def seed_queues(fake_api: FakeApi, *, cpu: int = 4, preemption: str = "Never", cluster_queue: str = "cq") -> None:
    seed = fake_api.server.seed
    seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    seed(runtime_doc())
    seed({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    seed(
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue},
            "spec": {
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": preemption},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}],
                    }
                ],
            },
        }
    )
    seed(
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": NS},
            "spec": {"clusterQueue": cluster_queue},
        }
    )
    for name, value in (("low", 10), ("high", 1000)):
        seed({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value})


def trainjob(
    name: str, *, nodes: int = 1, cpu: int = 1, priority: str | None = None, suspend: bool = True
) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    if priority is not None:
        labels["kueue.x-k8s.io/priority-class"] = priority
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": nodes, "resourcesPerNode": {"requests": {"cpu": str(cpu)}}},
            "suspend": suspend,
        },
    }


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
