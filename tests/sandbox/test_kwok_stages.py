"""KWOK Stages move Nodes and Pods over the API (``simulations.kwok.stage_controller.KwokStages``).

The Stages are the ones the simulator plays (manifests/kwok/stages), read by
``simulations.kwok``; ``speedup`` divides their delays so the test takes a fraction of a second.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fakeapi.fixtures import FakeApi
from sandbox_support import kube, node, pod

from sandbox.apiserver.records import StoredEvent
from sandbox.standins import fast_informers
from simulations.kwok import (
    KWOK_NODE_ANNOTATION,
    POD_COMPLETE_DELAY_ANNOTATION,
    POD_COMPLETE_JITTER_ANNOTATION,
    default_stages,
    load_stages,
)
from simulations.kwok.stage_controller import NODE_LEASE_NAMESPACE, KwokStages
from tests.eventually import eventually

SPEEDUP = 50.0


def kwok_node(name: str, *, ready: bool = True) -> dict[str, Any]:
    found = node(name, ready=ready)
    found["metadata"]["annotations"] = {KWOK_NODE_ANNOTATION: "fake"}
    return found


def job_pod(name: str, node_name: str, *, run: str = "20s", **annotations: str) -> dict[str, Any]:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u-1", "controller": True}
    found = pod(name, owners=[owner], nodeName=node_name)
    found["metadata"]["annotations"] = {
        POD_COMPLETE_DELAY_ANNOTATION: run,
        POD_COMPLETE_JITTER_ANNOTATION: run,
        **annotations,
    }
    return found


async def test_stages_move_a_bound_pod_to_running_then_succeeded_after_their_delays(fake_api: FakeApi) -> None:
    phases: dict[str, list[tuple[float, str]]] = {}
    loop = asyncio.get_running_loop()

    def record(event: StoredEvent) -> None:
        if event.obj.get("kind") == "Pod" and event.type == "MODIFIED":
            seen = phases.setdefault(event.obj["metadata"]["name"], [])
            phase = event.obj["status"]["phase"]
            if not seen or seen[-1][1] != phase:
                seen.append((loop.time(), phase))

    fake_api.server.seed(kwok_node("kwok-1"))
    fake_api.server.seed(node("real-1"))  # not annotated: not KWOK's to run
    fake_api.store.observers.append(record)
    async with (
        kube(fake_api) as client,
        KwokStages(client, default_stages(), speedup=SPEEDUP, informer_settings=fast_informers()) as kwok,
    ):
        await kwok.synced()
        created_at = loop.time()
        await client.create(job_pod("trainer", "kwok-1", run="20s"))
        await client.create(job_pod("elsewhere", "real-1"))
        await client.create(pod("unbound"))

        async def succeeded() -> bool:
            return (await client.get("Pod", "trainer", "default"))["status"]["phase"] == "Succeeded"

        await eventually(succeeded, timeout=10.0, what="the KWOK pod to succeed")
        done = await client.get("Pod", "trainer", "default")
        assert done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
        assert done["status"]["podIP"]
        assert {c["type"]: c["status"] for c in done["status"]["conditions"]}["Ready"] == "True"
        for other in ("elsewhere", "unbound"):
            assert (await client.get("Pod", other, "default"))["status"]["phase"] == "Pending"
    (running_at, running), (finished_at, finished) = phases["trainer"]
    assert (running, finished) == ("Running", "Succeeded")
    # pod-ready waits 2 s + up to 8 s of jitter, pod-complete the annotated 20 s: all over SPEEDUP
    assert running_at - created_at >= 2.0 / SPEEDUP
    assert finished_at - running_at >= 20.0 / SPEEDUP
    assert [stage for key, stage in kwok.applied if key == "Pod:default/trainer"] == ["pod-ready", "pod-complete"]


async def test_a_custom_stage_can_fail_pods_and_deletion_is_a_stage(fake_api: FakeApi, tmp_path: Path) -> None:
    failing = tmp_path / "pod-fail.yaml"
    failing.write_text(
        """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-fail}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchAnnotations: {sandbox.test/fail: "true"}
    matchExpressions:
    - {key: .status.phase, operator: In, values: [Running]}
  weight: 100
  next:
    statusTemplate: |
      phase: Failed
"""
    )
    stages = [s for s in default_stages() if s.name != "pod-complete"] + load_stages([failing])
    fake_api.server.seed(kwok_node("kwok-1"))
    async with (
        kube(fake_api) as client,
        KwokStages(client, stages, speedup=SPEEDUP, informer_settings=fast_informers()) as kwok,
    ):
        await kwok.synced()
        created = await client.create(job_pod("doomed", "kwok-1", **{"sandbox.test/fail": "true"}))

        async def failed() -> bool:
            return (await client.get("Pod", "doomed", "default"))["status"]["phase"] == "Failed"

        await eventually(failed, timeout=10.0, what="the pod-fail stage")
        doomed = await client.get("Pod", "doomed", "default")
        assert doomed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
        # a finalizer holds a deleted pod with a deletionTimestamp: KWOK's pod-delete stage removes it
        await client.patch("Pod", "doomed", {"metadata": {"finalizers": ["sandbox.test/hold"]}}, "default")
        await client.delete("Pod", "doomed", "default")
        assert created["metadata"]["uid"]

        async def gone() -> bool:
            return "Pod:default/doomed" in {key for key, stage in kwok.applied if stage == "pod-delete"}

        await eventually(gone, timeout=10.0, what="the pod-delete stage")


async def test_nodes_initialize_and_heartbeat_through_leases(fake_api: FakeApi) -> None:
    fake_api.server.seed(kwok_node("kwok-1", ready=False))
    async with (
        kube(fake_api) as client,
        KwokStages(client, default_stages(), heartbeat_seconds=0.05, informer_settings=fast_informers()) as kwok,
    ):
        await kwok.synced()

        async def ready() -> bool:
            found = await client.get("Node", "kwok-1")
            return {c["type"]: c["status"] for c in found["status"]["conditions"]}.get("Ready") == "True"

        await eventually(ready, timeout=10.0, what="node-initialize to make the node Ready")
        node_now = await client.get("Node", "kwok-1")
        assert node_now["status"]["addresses"][0]["type"] == "InternalIP"
        first = await eventually(lambda: _lease(fake_api), timeout=10.0, what="the node's Lease in kube-node-lease")
        assert first["spec"]["holderIdentity"] == "kwok-1"

        async def renewed() -> bool:
            lease = _lease(fake_api)
            return lease is not None and lease["spec"]["renewTime"] != first["spec"]["renewTime"]

        await eventually(renewed, timeout=10.0, what="a heartbeat renewing the Lease")


def _lease(fake_api: FakeApi) -> dict[str, Any] | None:
    leases = fake_api.server.type_of("coordination.k8s.io/v1", "Lease")
    found = list(fake_api.store.items(leases, NODE_LEASE_NAMESPACE))
    return dict(found[0]) if found else None
