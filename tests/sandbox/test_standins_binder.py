"""The binder and the pod runner over HTTP: scheduling gates, node selectors, affinity, taints, capacity, node failure."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fakeapi.fixtures import FakeApi
from sandbox_support import condition_of, kube, node, pod

from sandbox.standins import EXIT_CODE_ANNOTATION, RUN_SECONDS_ANNOTATION, Standins
from scheduler.kube import KubeClient
from tests.eventually import eventually


@pytest.fixture
async def cluster(fake_api: FakeApi) -> AsyncIterator[tuple[KubeClient, Standins]]:
    fake_api.server.seed(node("a-1", cpu="2", labels={"pool": "a"}))
    fake_api.server.seed(
        node("b-1", cpu="2", labels={"pool": "b"}, taints=[{"key": "dedicated", "value": "b", "effect": "NoSchedule"}])
    )
    fake_api.server.seed(node("c-down", cpu="64", labels={"pool": "c"}, ready=False))
    fake_api.server.seed(node("c-cordoned", cpu="64", labels={"pool": "c"}, unschedulable=True))
    async with kube(fake_api) as client, Standins(client, jobset=False, job=False, run_seconds=30.0) as standins:
        await standins.synced()
        yield client, standins


def workload(name: str, cpu: str = "1", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body = pod(name, containers=[{"name": "main", "image": "x", "resources": {"requests": {"cpu": cpu}}}], **spec)
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


async def _get(client: KubeClient, name: str) -> dict[str, Any]:
    return await client.get("Pod", name, "default")


async def _phase(client: KubeClient, name: str, phase: str) -> dict[str, Any] | None:
    found = await _get(client, name)
    return found if found["status"].get("phase") == phase else None


async def _unschedulable(client: KubeClient, name: str) -> dict[str, Any] | None:
    found = await _get(client, name)
    scheduled = condition_of(found, "PodScheduled")
    return found if scheduled and scheduled["reason"] == "Unschedulable" else None


async def test_a_gated_pod_stays_pending_until_the_gate_is_removed(cluster: tuple[KubeClient, Standins]) -> None:
    client, standins = cluster
    await client.create(workload("gated", schedulingGates=[{"name": "trainyard.io/placement"}]))
    await client.create(workload("free"))
    await eventually(lambda: _phase(client, "free", "Running"), what="the ungated pod to run")
    held = await _get(client, "gated")
    assert held["status"]["phase"] == "Pending"
    assert "nodeName" not in held["spec"]
    await client.patch("Pod", "gated", {"spec": {"schedulingGates": None}}, "default")
    running = await eventually(lambda: _phase(client, "gated", "Running"), what="the ungated pod to run")
    assert running["spec"]["nodeName"] == "a-1"
    assert condition_of(running, "Ready")["status"] == "True"  # type: ignore[index]
    assert standins.binder is not None
    assert standins.binder.bound == 2


async def test_node_selector_taints_readiness_and_cordons_are_respected(cluster: tuple[KubeClient, Standins]) -> None:
    client, _ = cluster
    await client.create(workload("wants-b", nodeSelector={"pool": "b"}))
    await client.create(
        workload(
            "tolerates-b",
            nodeSelector={"pool": "b"},
            tolerations=[{"key": "dedicated", "operator": "Equal", "value": "b", "effect": "NoSchedule"}],
        )
    )
    await client.create(workload("wants-c", nodeSelector={"pool": "c"}))
    placed = await eventually(lambda: _phase(client, "tolerates-b", "Running"), what="the tolerating pod")
    assert placed["spec"]["nodeName"] == "b-1"
    refused = await eventually(lambda: _unschedulable(client, "wants-b"), what="an Unschedulable condition")
    message = condition_of(refused, "PodScheduled")["message"]  # type: ignore[index]
    assert message.startswith("0/4 nodes are available: ")
    assert "1 node(s) had untolerated taint {dedicated: b}" in message
    assert "node(s) didn't match Pod's node affinity/selector" in message
    down = await eventually(lambda: _unschedulable(client, "wants-c"), what="no ready node in pool c")
    down_message = condition_of(down, "PodScheduled")["message"]  # type: ignore[index]
    assert "1 node(s) were not ready" in down_message
    assert "1 node(s) were unschedulable" in down_message
    # uncordoning the node lets the waiting pod on
    await client.patch("Node", "c-cordoned", {"spec": {"unschedulable": False}})
    moved = await eventually(lambda: _phase(client, "wants-c", "Running"), what="the pod to land once uncordoned")
    assert moved["spec"]["nodeName"] == "c-cordoned"


async def test_required_node_affinity(cluster: tuple[KubeClient, Standins]) -> None:
    client, _ = cluster
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["a"]}]},
                ]
            }
        }
    }
    await client.create(
        workload(
            "not-a",
            affinity=affinity,
            tolerations=[{"key": "dedicated", "operator": "Exists"}],
        )
    )
    placed = await eventually(lambda: _phase(client, "not-a", "Running"), what="the affinity pod")
    assert placed["spec"]["nodeName"] == "b-1"


async def test_capacity_holds_a_pod_until_room_is_freed(cluster: tuple[KubeClient, Standins]) -> None:
    client, _ = cluster
    await client.create(
        workload("big-1", cpu="1500m", nodeSelector={"pool": "a"}, annotations={RUN_SECONDS_ANNOTATION: "0.3"})
    )
    await eventually(lambda: _phase(client, "big-1", "Running"), what="the first pod")
    await client.create(workload("big-2", cpu="1500m", nodeSelector={"pool": "a"}))
    waiting = await eventually(lambda: _unschedulable(client, "big-2"), what="the second pod to wait for room")
    assert "1 Insufficient cpu" in condition_of(waiting, "PodScheduled")["message"]  # type: ignore[index]
    done = await eventually(lambda: _phase(client, "big-1", "Succeeded"), what="the first pod to finish")
    assert done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    second = await eventually(lambda: _phase(client, "big-2", "Running"), what="the second pod once room is freed")
    assert second["spec"]["nodeName"] == "a-1"


async def test_exit_codes_and_node_failure_fail_pods(cluster: tuple[KubeClient, Standins]) -> None:
    client, _ = cluster
    await client.create(
        workload(
            "crash", nodeSelector={"pool": "a"}, annotations={RUN_SECONDS_ANNOTATION: "0.1", EXIT_CODE_ANNOTATION: "3"}
        )
    )
    crashed = await eventually(lambda: _phase(client, "crash", "Failed"), what="the crashing pod to fail")
    assert crashed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    await client.create(workload("victim", nodeSelector={"pool": "a"}))
    await eventually(lambda: _phase(client, "victim", "Running"), what="the victim to run")
    await client.patch("Node", "a-1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, status=True)
    lost = await eventually(lambda: _phase(client, "victim", "Failed"), what="the pod on the NotReady node to fail")
    assert lost["status"]["reason"] == "NodeNotReady"


async def test_a_pod_on_a_node_that_does_not_exist_is_lost(cluster: tuple[KubeClient, Standins]) -> None:
    client, _ = cluster
    await client.create(workload("nowhere", nodeName="ghost"))
    lost = await eventually(lambda: _phase(client, "nowhere", "Failed"), what="the pod on a missing node to fail")
    assert lost["status"]["reason"] == "NodeLost"
