"""A restarted queue controller rebuilds its engine from the Workloads on the server: a TAS gang
admitted before the restart keeps its nodes, so a gang submitted after it is not placed there."""

from __future__ import annotations

import asyncio
from typing import Any

from fakeapi.fixtures import FakeApi
from queue_support import (
    NS,
    condition,
    gpu_node,
    is_admitted,
    kube,
    local_queue_doc,
    seed_basics,
    start_controller,
    tas_cluster_queue_doc,
    whole_host_gang,
)

from scheduler.api.topology_assignment import decode_topology_assignment
from tests.eventually import eventually


def _seed_tas_cluster(fake_api: FakeApi) -> None:
    """Two blocks of two 8-GPU hosts, one TAS flavor and a queue with quota for twice as many: nodes, not quota, are what runs out."""
    seed_basics(fake_api, tas=True)
    fake_api.server.seed(tas_cluster_queue_doc("cq"))
    fake_api.server.seed(local_queue_doc("lq", "cq"))
    for block in range(2):
        for host in range(2):
            fake_api.server.seed(gpu_node(f"gpu-b{block}-h{host}", f"block-{block}"))


def _placed_nodes(workload: dict[str, Any]) -> list[str]:
    nodes: list[str] = []
    for assignment in workload["status"]["admission"]["podSetAssignments"]:
        nodes.extend(decode_topology_assignment(assignment["topologyAssignment"]).pod_nodes())
    return nodes


async def test_a_gang_admitted_before_a_restart_keeps_its_nodes(fake_api: FakeApi) -> None:
    _seed_tas_cluster(fake_api)
    fake_api.server.seed(whole_host_gang("first"))
    async with kube(fake_api) as client:

        async def admitted(name: str) -> dict[str, Any] | None:
            document = await client.get("Workload", name, NS)
            return document if is_admitted(document) else None

        async def waiting(name: str) -> dict[str, Any] | None:
            """The Workload once its QuotaReserved=False condition says no gang placement is free."""
            document = await client.get("Workload", name, NS)
            reserved = condition(document, "QuotaReserved")
            waits = reserved is not None and "no topology placement" in str(reserved.get("message"))
            return document if waits else None

        process = start_controller(client)
        try:
            first = await eventually(lambda: admitted("first"), what="the first gang admitted")
        finally:
            await process.stop()
        held = _placed_nodes(first)
        assert len(set(held)) == 2  # one block's two hosts

        # a fresh controller (a new leadership term) rebuilds its engine from the server
        process = start_controller(client)
        try:
            await eventually(lambda: process.built.queue.mirror.live, what="the engine rebuilt")
            await client.create(whole_host_gang("second"), namespace=NS)
            second = await eventually(lambda: admitted("second"), what="the second gang admitted")
            assert not set(_placed_nodes(second)) & set(held)
            await client.create(whole_host_gang("third"), namespace=NS)
            # both blocks are now taken: the third gang waits, it is not put on the first's nodes
            await eventually(lambda: waiting("third"), what="the third gang told no placement is free")
            await asyncio.sleep(0.3)
            assert not is_admitted(await client.get("Workload", "third", NS))
        finally:
            await process.stop()
        still = await client.get("Workload", "first", NS)
        assert is_admitted(still)
        assert _placed_nodes(still) == held
