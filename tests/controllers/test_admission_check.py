"""The topology AdmissionCheck's controller against the embedded API server, Kueue's part played by
the test: it writes what Kueue writes (a quota reservation with the check Pending, an eviction
that resets it) and reads back what the controller answers: the check's Active condition,
Ready with the placement in podSetUpdates, Retry with a requeue delay, Rejected, and after a node
failure the re-placement inside the gang's domain, or Retry."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from admission_check_support import BLOCK, CHECK, NS, condition, reservation, reserve, seed_cluster
from fakeapi.fixtures import FakeApi
from launcher_support import FAST_INFORMERS

from scheduler.api.topology_assignment import HOSTNAME_LABEL, decode_topology_assignment
from scheduler.controllers.admission_check.beside_kueue import (
    BesideKueueService,
    CheckSettings,
    build_beside_kueue_service,
)
from scheduler.controllers.checked_placement import (
    PLACEMENT_ANNOTATION,
    REPLACED_PLACEMENT_ANNOTATION,
    checked_topology_assignments,
)
from scheduler.kube import KubeClient
from tests.eventually import eventually

EVICTED = {
    "admission": None,
    "conditions": [condition("QuotaReserved", False), condition("Evicted", True)],
    "admissionChecks": [{"name": CHECK, "state": "Pending", "message": "Reset to Pending after eviction",
                         "lastTransitionTime": "2026-01-01T00:01:00Z"}],
}  # fmt: skip


@contextlib.asynccontextmanager
async def controllers(fake_api: FakeApi) -> AsyncIterator[tuple[KubeClient, BesideKueueService]]:
    api_client = await fake_api.api_client()
    client = KubeClient(api_client)
    service = build_beside_kueue_service(
        client,
        leader_elect=False,
        settings=CheckSettings(retry_base_seconds=2.0),
        informer_settings=FAST_INFORMERS,
        workers=2,
    )
    task = asyncio.create_task(service.manager.run())
    try:
        yield client, service
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await api_client.close()


async def answer(client: KubeClient, name: str, state: str) -> dict[str, Any]:
    """The Workload once the controller answered ``state`` on the check."""
    found: dict[str, Any] = {}

    async def answered() -> bool:
        workload = await client.get("Workload", name, NS)
        checks = (workload.get("status") or {}).get("admissionChecks") or []
        found.update(workload)
        return any(c["name"] == CHECK and c["state"] == state for c in checks)

    await eventually(answered, what=f"check {state} on {name}")
    return found


def the_check(workload: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in workload["status"]["admissionChecks"] if c["name"] == CHECK)


def placed_nodes(workload: dict[str, Any]) -> list[str]:
    return decode_topology_assignment(checked_topology_assignments(workload)["main"]).pod_nodes()


async def test_the_check_turns_active_and_a_reserved_gang_gets_ready_in_one_block(fake_api: FakeApi) -> None:
    seed_cluster(fake_api)
    async with controllers(fake_api) as (client, _):

        async def active() -> bool:
            check = await client.get("AdmissionCheck", CHECK)
            conditions = (check.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Active" and c["status"] == "True" and c["reason"] == "Active" for c in conditions)

        await eventually(active, what="the AdmissionCheck Active")
        await reserve(client, fake_api, "llm", 2)
        workload = await answer(client, "llm", "Ready")
        check = the_check(workload)
        (update,) = check["podSetUpdates"]
        assert update["name"] == "main"
        assert update["labels"] == {"trainyard.io/managed": "true"}
        nodes = placed_nodes(workload)
        assert len(nodes) == 2
        block = {node.split("-")[0] for node in nodes}
        assert len(block) == 1  # a gang of 2 fits one block: it is kept there
        assert update["nodeSelector"] == {BLOCK: block.pop()}
        assert json.loads(update["annotations"][PLACEMENT_ANNOTATION])["levels"] == [HOSTNAME_LABEL]
        assert "placed by trainyard" in check["message"]


async def test_a_gang_that_does_not_fit_now_gets_retry_and_ready_once_nodes_free(fake_api: FakeApi) -> None:
    seed_cluster(fake_api)
    async with controllers(fake_api) as (client, _):
        await reserve(client, fake_api, "first", 3)
        await answer(client, "first", "Ready")
        await reserve(client, fake_api, "second", 2)
        waiting = await answer(client, "second", "Retry")
        check = the_check(waiting)
        assert check["requeueAfterSeconds"] == 2
        assert "does not fit the free nodes now" in check["message"]
        assert "podSetUpdates" not in check

        # Kueue evicts on Retry and resets the check; then the first gang finishes.
        await client.patch("Workload", "second", {"status": EVICTED}, NS, status=True)
        finished = {"conditions": [condition("QuotaReserved", True), condition("Finished", True)]}
        await client.patch("Workload", "first", {"status": finished}, NS, status=True)
        await asyncio.sleep(0.3)
        # Kueue reserves quota again after the requeue delay (the retry counted)
        await client.patch("Workload", "second", {"status": reservation(2, retries=1)}, NS, status=True)
        again = await answer(client, "second", "Ready")
        assert len(placed_nodes(again)) == 2


async def test_a_gang_that_can_never_fit_is_rejected(fake_api: FakeApi) -> None:
    seed_cluster(fake_api)
    async with controllers(fake_api) as (client, _):
        await reserve(client, fake_api, "too-wide", 1, 16)
        rejected = await answer(client, "too-wide", "Rejected")
        assert "can never be placed" in the_check(rejected)["message"]
        assert "16 nvidia.com/gpu per pod" in the_check(rejected)["message"]
        await reserve(client, fake_api, "too-many", 5)
        rejected = await answer(client, "too-many", "Rejected")
        assert "room for 4 pods" in the_check(rejected)["message"]


async def test_a_failed_node_moves_its_pods_inside_the_block(fake_api: FakeApi) -> None:
    seed_cluster(fake_api, nodes_per_block=3)
    async with controllers(fake_api) as (client, _):
        await reserve(client, fake_api, "llm", 2)
        placed = await answer(client, "llm", "Ready")
        before = placed_nodes(placed)
        failed = before[0]
        node = await client.get("Node", failed)
        node["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]
        await client.replace(node, status=True)

        async def replaced() -> dict[str, Any] | None:
            workload = await client.get("Workload", "llm", NS)
            annotations = workload["metadata"].get("annotations") or {}
            return workload if REPLACED_PLACEMENT_ANNOTATION in annotations else None

        await eventually(replaced, what="the re-placement annotation")
        workload = await client.get("Workload", "llm", NS)
        after = placed_nodes(workload)
        assert failed not in after
        assert after[1] == before[1]  # the other pod keeps its node and its rank
        assert after[0].split("-")[0] == failed.split("-")[0]  # inside the same block
        assert the_check(workload)["state"] == "Ready"


async def test_a_failed_node_with_no_room_in_the_block_turns_the_check_retry(fake_api: FakeApi) -> None:
    seed_cluster(fake_api)
    async with controllers(fake_api) as (client, _):
        await reserve(client, fake_api, "llm", 2)
        placed = await answer(client, "llm", "Ready")
        failed = placed_nodes(placed)[0]
        await client.delete("Node", failed)
        retry = await answer(client, "llm", "Retry")
        assert f"Node {failed} failed" in the_check(retry)["message"]


async def test_a_new_term_keeps_placed_gangs_on_their_nodes(fake_api: FakeApi) -> None:
    seed_cluster(fake_api)
    async with controllers(fake_api) as (client, _):
        await reserve(client, fake_api, "first", 3)
        first = await answer(client, "first", "Ready")
    async with controllers(fake_api) as (client, service):
        await reserve(client, fake_api, "second", 2)
        await answer(client, "second", "Retry")  # the restored gang still holds 3 of the 4 nodes
        assert service.check.check.placed(f"{NS}/first") is not None
        assert placed_nodes(await client.get("Workload", "first", NS)) == placed_nodes(first)
