"""PodsReady from the workload's pods, the waitForPodsReady timeout, and node failures."""

from __future__ import annotations

from typing import Any

from builders import node
from fakeapi.fixtures import FakeApi
from queue_support import NS, Reader, condition, controller, is_admitted, kube, seed_queues, trainjob

from scheduler.controllers.constants import MANAGED_LABEL, WORKLOAD_ANNOTATION
from scheduler.engine import EngineConfig
from scheduler.engine.config import RequeuingStrategy, WaitForPodsReady
from scheduler.kube import KubeClient
from tests.eventually import eventually


def pod(name: str, workload: str, *, ready: bool, node: str = "n1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {MANAGED_LABEL: "true"},
            "annotations": {WORKLOAD_ANNOTATION: workload},
        },
        "spec": {"nodeName": node, "containers": [{"name": "node", "image": "trainer:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


async def test_ready_pods_mark_the_workload_ready_and_a_slow_start_is_evicted(
    fake_api: FakeApi, reader: Reader
) -> None:
    seed_queues(fake_api, cpu=2)
    fake_api.server.seed(trainjob("quick", nodes=1))
    fake_api.server.seed(trainjob("slow", nodes=1))
    config = EngineConfig(
        wait_for_pods_ready=WaitForPodsReady(
            timeout_seconds=1.0, requeuing=RequeuingStrategy(backoff_base_seconds=30.0)
        )
    )
    async with kube(fake_api) as client, controller(client, config=config):

        async def both_admitted() -> bool:
            return all([is_admitted(await reader.workload_of(n)) for n in ("quick", "slow")])

        await eventually(both_admitted, what="both admitted")
        quick = await reader.workload_of("quick")
        assert quick is not None
        await create_pod(client, pod("quick-0", quick["metadata"]["name"], ready=True))

        async def quick_ready() -> bool:
            c = condition(await reader.workload_of("quick"), "PodsReady")
            return c is not None and c["status"] == "True"

        await eventually(quick_ready, what="PodsReady on the quick job")

        async def slow_evicted() -> bool:
            c = condition(await reader.workload_of("slow"), "Evicted")
            return c is not None and c["status"] == "True"

        await eventually(slow_evicted, timeout=8, what="the slow job's eviction")
        slow = await reader.workload_of("slow")
        quick = await reader.workload_of("quick")
    assert slow is not None
    assert quick is not None
    evicted = condition(slow, "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "PodsReadyTimeout"
    assert not slow["status"].get("admission")
    assert slow["status"]["requeueState"]["count"] == 1
    assert slow["status"]["requeueState"]["requeueAt"]
    ready = condition(quick, "PodsReady")
    assert ready is not None
    assert ready["reason"] == "Started"
    assert is_admitted(quick)  # ready in time: not evicted


async def test_a_node_that_fails_under_a_running_job_evicts_it(fake_api: FakeApi, reader: Reader) -> None:
    seed_queues(fake_api, cpu=2)
    fake_api.server.seed(node("n1", ready=True))
    fake_api.server.seed(trainjob("job", nodes=1))
    # A requeue backoff keeps the evicted job out of the queue while the test reads it: without
    # one it is admitted again at once, and Kueue then turns Evicted False (reason QuotaReserved),
    # which a loaded machine can do between two polls.
    config = EngineConfig(
        wait_for_pods_ready=WaitForPodsReady(
            timeout_seconds=300.0, requeuing=RequeuingStrategy(backoff_base_seconds=60.0)
        )
    )
    async with kube(fake_api) as client, controller(client, config=config):
        await eventually(lambda: _admitted(reader, "job"), what="the admission")
        workload = await reader.workload_of("job")
        assert workload is not None
        await create_pod(client, pod("job-0", workload["metadata"]["name"], ready=True, node="n1"))
        await eventually(lambda: _condition_true(reader, "job", "PodsReady"), what="PodsReady")
        await client.patch(
            "Node", "n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, status=True
        )
        await eventually(lambda: _condition_true(reader, "job", "Evicted"), timeout=30.0, what="the eviction")
        workload = await reader.workload_of("job")
    assert workload is not None
    evicted = condition(workload, "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "NodeFailures"
    assert "n1" in evicted["message"]
    assert not workload["status"].get("admission")
    assert workload["status"]["requeueState"]["count"] == 1


async def create_pod(client: KubeClient, document: dict[str, Any]) -> None:
    """Create, then report status as the kubelet would (a create does not keep status)."""
    await client.create(document)
    name = document["metadata"]["name"]
    await client.patch("Pod", name, {"status": document["status"]}, NS, status=True)


async def _admitted(reader: Reader, name: str) -> bool:
    return is_admitted(await reader.workload_of(name))


async def _condition_true(reader: Reader, name: str, kind: str) -> bool:
    c = condition(await reader.workload_of(name), kind)
    return c is not None and c["status"] == "True"
