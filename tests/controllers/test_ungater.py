"""The pod ungater against the fake API server: a pod stays gated until the committed admission
places its rank, then one update pins it and lifts the gate."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import ResourceFlavorBuilder, WorkloadBuilder, namespace
from fakeapi.fixtures import FakeApi
from launcher_support import NS, admitted_status, launcher

from scheduler.api.topology_assignment import HOSTNAME_LABEL
from scheduler.controllers.constants import MANAGED_LABEL, PODSET_LABEL, TOPOLOGY_SCHEDULING_GATE, WORKLOAD_ANNOTATION
from tests.eventually import eventually


def gated(name: str, completion: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {
                MANAGED_LABEL: "true",
                PODSET_LABEL: "node",
                "jobset.sigs.k8s.io/job-index": "0",
                "batch.kubernetes.io/job-completion-index": str(completion),
            },
            "annotations": {WORKLOAD_ANNOTATION: "trainjob-llm"},
        },
        "spec": {
            "schedulingGates": [{"name": "example.com/other"}, {"name": TOPOLOGY_SCHEDULING_GATE}],
            "containers": [{"name": "node", "image": "trainer:1"}],
        },
    }


async def test_pods_stay_gated_until_their_rank_is_placed(fake_api: FakeApi) -> None:
    fake_api.server.seed(namespace(NS))
    fake_api.server.seed(ResourceFlavorBuilder("rack-flavor").doc())
    fake_api.server.seed(WorkloadBuilder("trainjob-llm", NS).pod_set(count=2, name="node").doc())
    fake_api.server.seed(gated("p0", 0))
    fake_api.server.seed(gated("p1", 1))
    async with launcher(fake_api) as (client, built):
        await asyncio.sleep(0.3)  # not admitted: nothing may happen
        assert built.writes.counts["update Pod"] == 0

        # Admitted, but the assignment places only rank 0 (say, a replacement node still pending).
        partial = admitted_status([("n1", 1)])
        await client.patch("Workload", "trainjob-llm", {"status": partial}, NS, status=True)

        async def first_ungated() -> bool:
            pod = await client.get("Pod", "p0", NS)
            return pod["spec"].get("nodeSelector") == {HOSTNAME_LABEL: "n1"}

        await eventually(first_ungated, what="rank 0 pinned to n1")
        p0 = await client.get("Pod", "p0", NS)
        assert p0["spec"]["schedulingGates"] == [{"name": "example.com/other"}]  # only the topology gate lifted
        await asyncio.sleep(0.2)
        p1 = await client.get("Pod", "p1", NS)
        assert {"name": TOPOLOGY_SCHEDULING_GATE} in p1["spec"]["schedulingGates"]
        assert not p1["spec"].get("nodeSelector")

        await client.patch(
            "Workload", "trainjob-llm", {"status": admitted_status([("n1", 1), ("n2", 1)])}, NS, status=True
        )

        async def second_ungated() -> bool:
            pod = await client.get("Pod", "p1", NS)
            return pod["spec"].get("nodeSelector") == {HOSTNAME_LABEL: "n2"}

        await eventually(second_ungated, what="rank 1 pinned to n2 once placed")
        assert built.writes.counts["update Pod"] == 2
