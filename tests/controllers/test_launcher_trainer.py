"""The ``trainer`` launcher against the fake API server; the test plays Kubeflow Trainer's part.

After the launcher resumes the TrainJob with its runtimePatches entry, the test renders the JobSet
from the TrainJob exactly as Trainer would (``runtimes.render``, patches merged), creates the
pods the Job controller would, and checks that the placement reached them.
"""

from __future__ import annotations

from typing import Any

from fakeapi.fixtures import FakeApi
from kubeflow_trainer_standin import trainer_renders
from launcher_support import (
    EVICTED_STATUS,
    NS,
    TOLERATION,
    admit,
    condition,
    gated_pod,
    launcher,
    seed_cluster,
    writes_since,
)

from scheduler.api.topology_assignment import HOSTNAME_LABEL
from scheduler.controllers.constants import (
    MANAGED_LABEL,
    PODSET_LABEL,
    RUNTIME_PATCH_MANAGER,
    TAS_LABEL,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from scheduler.kube import KubeClient
from tests.eventually import eventually


def own_patches(trainjob: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in trainjob["spec"].get("runtimePatches") or () if p.get("manager") == RUNTIME_PATCH_MANAGER]


async def test_trainer_mode_resumes_with_a_runtime_patch_that_places_the_pods(fake_api: FakeApi) -> None:
    trainjob = seed_cluster(fake_api, nodes=3)
    other = {
        "manager": "example.com/team-defaults",
        "trainingRuntimeSpec": {"template": {"metadata": {"labels": {"team": "a"}}}},
    }
    await _add_patch(fake_api, other)
    async with launcher(fake_api, "trainer") as (client, built):
        first_request = len(fake_api.server.requests)
        workload = await admit(client, fake_api, trainjob, [("n1", 1), ("n2", 2)])

        async def resumed() -> bool:
            return (await client.get("TrainJob", "llm", NS))["spec"].get("suspend") is False

        await eventually(resumed, what="the TrainJob resumed")
        job = await client.get("TrainJob", "llm", NS)
        # One write: the patch and the unsuspend together (Trainer's webhook allows patch changes
        # only around a suspension); the other manager's patch is kept, ours comes last.
        assert writes_since(fake_api, first_request) == [
            f"PUT /apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs/llm"
        ]
        assert built.writes.counts["update TrainJob"] == 1
        assert [p["manager"] for p in job["spec"]["runtimePatches"]] == [
            "example.com/team-defaults",
            RUNTIME_PATCH_MANAGER,
        ]
        assert not (await client.list("JobSet", NS)).items  # Trainer creates it, not trainyard

        jobset = trainer_renders(job)
        assert jobset["metadata"]["labels"][MANAGED_LABEL] == "true"
        pod_template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        assert pod_template["metadata"]["labels"][PODSET_LABEL] == "node"
        assert pod_template["metadata"]["labels"][TAS_LABEL] == "true"
        assert pod_template["metadata"]["annotations"][WORKLOAD_ANNOTATION] == workload
        assert pod_template["spec"]["nodeSelector"] == {"pool": "a"}
        assert pod_template["spec"]["tolerations"] == [TOLERATION]
        assert pod_template["spec"]["schedulingGates"] == [{"name": TOPOLOGY_SCHEDULING_GATE}]

        for completion in range(3):
            await client.create(gated_pod(jobset, completion))

        async def ungated() -> bool:
            pods = (await client.list("Pod", NS)).items
            return len(pods) == 3 and all(not p["spec"].get("schedulingGates") for p in pods)

        await eventually(ungated, what="the pods ungated")
        hosts = [
            (await client.get("Pod", f"llm-node-0-{i}", NS))["spec"]["nodeSelector"][HOSTNAME_LABEL] for i in range(3)
        ]
        assert hosts == ["n1", "n2", "n2"]
        # Trainer mirrors the JobSet; the launcher writes no TrainJob status in this mode.
        assert condition(await client.get("TrainJob", "llm", NS), "Created") is None


async def test_trainer_mode_eviction_suspends_and_removes_the_patch_once_nothing_is_active(fake_api: FakeApi) -> None:
    trainjob = seed_cluster(fake_api, nodes=2)
    async with launcher(fake_api, "trainer") as (client, _):
        workload = await admit(client, fake_api, trainjob, [("n1", 2)])

        async def resumed() -> bool:
            return (await client.get("TrainJob", "llm", NS))["spec"].get("suspend") is False

        await eventually(resumed, what="the TrainJob resumed")
        # Trainer's status: a replicated job is still active.
        active = [{"name": "node", "ready": 2, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}]
        await client.patch("TrainJob", "llm", {"status": {"jobsStatus": active}}, NS, status=True)
        await client.patch("Workload", workload, {"status": EVICTED_STATUS}, NS, status=True)

        async def suspended() -> bool:
            return (await client.get("TrainJob", "llm", NS))["spec"].get("suspend") is True

        await eventually(suspended, what="the TrainJob suspended")
        # Trainer's webhook refuses patch changes while a replicated job is active: the patch stays.
        assert own_patches(await client.get("TrainJob", "llm", NS))

        idle = [{"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 1}]
        await client.patch("TrainJob", "llm", {"status": {"jobsStatus": idle}}, NS, status=True)

        async def patch_removed() -> bool:
            return not own_patches(await client.get("TrainJob", "llm", NS))

        await eventually(patch_removed, what="the patch removed once nothing is active")
        assert (await client.get("TrainJob", "llm", NS))["spec"]["suspend"] is True


async def test_trainer_mode_eviction_with_nothing_active_is_one_update(fake_api: FakeApi) -> None:
    trainjob = seed_cluster(fake_api, nodes=2)
    async with launcher(fake_api, "trainer") as (client, built):
        workload = await admit(client, fake_api, trainjob, [("n1", 2)])

        async def resumed() -> bool:
            return (await client.get("TrainJob", "llm", NS))["spec"].get("suspend") is False

        await eventually(resumed, what="the TrainJob resumed")
        await client.patch("Workload", workload, {"status": EVICTED_STATUS}, NS, status=True)

        async def stopped() -> bool:
            job = await client.get("TrainJob", "llm", NS)
            return job["spec"].get("suspend") is True and not own_patches(job)

        await eventually(stopped, what="suspended with the patch removed")
        assert built.writes.counts["update TrainJob"] == 2  # the start, and the stop


async def _add_patch(fake_api: FakeApi, patch: dict[str, Any]) -> None:
    api_client = await fake_api.api_client()
    try:
        client = KubeClient(api_client)
        job = await client.get("TrainJob", "llm", NS)
        job["spec"]["runtimePatches"] = [patch]
        await client.replace(job)
    finally:
        await api_client.close()
