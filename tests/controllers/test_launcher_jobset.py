"""The ``jobset`` launcher and the pod ungater against the fake API server (real kubernetes-asyncio client).

The Workloads are written here as the queue controller writes them (a committed admission with
a compressed topologyAssignment), so these tests need no queue controller; the test plays the
JobSet controller's part (creating the gated pods, reporting JobSet status).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

from builders import trainjob as build_trainjob
from fakeapi.fixtures import FakeApi
from launcher_support import (
    EVICTED_STATUS,
    NS,
    TOLERATION,
    admit,
    admitted_status,
    condition,
    gated_pod,
    launcher,
    seed_cluster,
    workload_doc,
    writes_since,
)

from scheduler.api.topology_assignment import HOSTNAME_LABEL
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.constants import (
    MANAGED_LABEL,
    PODSET_LABEL,
    TAS_LABEL,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from scheduler.controllers.launcher.jobset import JOBSET_GONE_RECHECK, JobSetLauncher
from scheduler.controllers.launcher.reconciler import LaunchContext
from scheduler.controllers.views import TrainJobView, WorkloadView
from scheduler.controllers.writes import ObjectWrites
from scheduler.kube import KubeClient
from tests.eventually import eventually


async def test_admitted_trainjob_runs_with_its_placement_and_completes(fake_api: FakeApi) -> None:
    trainjob = seed_cluster(fake_api)
    async with launcher(fake_api) as (client, built):

        async def pending() -> bool:
            suspended = condition(await client.get("TrainJob", "llm", NS), "Suspended")
            return suspended is not None and suspended["reason"] == "Suspended"

        await eventually(pending, what="the queued TrainJob marked Suspended")
        workload = await admit(client, fake_api, trainjob, [("n1", 2), ("n2", 2)])
        first_request = len(fake_api.server.requests)

        async def resumed() -> bool:
            job = await client.get("TrainJob", "llm", NS)
            return job["spec"].get("suspend") is False and condition(job, "Created") is not None

        await eventually(resumed, what="the TrainJob resumed with its JobSet created")
        jobset = await check_launched_objects(client, fake_api, built, trainjob, workload, first_request)
        await check_resumed_conditions(client)
        await check_pods_ungated_by_rank(client, jobset)
        await check_completion_mirrored(client)


async def check_launched_objects(
    client: KubeClient, fake_api: FakeApi, built: Any, trainjob: dict[str, Any], workload: str, first_request: int
) -> dict[str, Any]:
    """The JobSet carries the placement and ownership; the PodGroup the gang; within the write budget."""
    jobset = await client.get("JobSet", "llm", NS)
    assert jobset["spec"]["suspend"] is False
    assert jobset["metadata"]["labels"][MANAGED_LABEL] == "true"
    assert jobset["metadata"]["ownerReferences"][0]["uid"] == trainjob["metadata"]["uid"]
    assert jobset["metadata"]["ownerReferences"][0]["controller"] is True
    pod_template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod_template["metadata"]["labels"][PODSET_LABEL] == "node"
    assert pod_template["metadata"]["labels"][TAS_LABEL] == "true"
    assert pod_template["metadata"]["annotations"][WORKLOAD_ANNOTATION] == workload
    assert pod_template["spec"]["nodeSelector"] == {"pool": "a"}
    assert TOLERATION in pod_template["spec"]["tolerations"]
    assert pod_template["spec"]["schedulingGates"] == [{"name": TOPOLOGY_SCHEDULING_GATE}]
    pod_group = await client.get("PodGroup", "llm", NS)
    assert pod_group["spec"]["minMember"] == 4
    # PodGroup, JobSet, the TrainJob's unsuspend: within the budget of 4 writes per admitted job.
    await asyncio.sleep(0.2)
    launched = writes_since(fake_api, first_request)
    assert len(launched) <= 4, launched
    assert built.writes.non_status_writes() <= 4, built.writes.counts

    return jobset


async def check_resumed_conditions(client: KubeClient) -> None:
    job = await client.get("TrainJob", "llm", NS)
    suspended = condition(job, "Suspended")
    assert suspended is not None
    assert suspended["status"] == "False"
    assert suspended["reason"] == "Resumed"
    created = condition(job, "Created")
    assert created is not None
    assert created["reason"] == "JobsCreationSucceeded"


async def check_pods_ungated_by_rank(client: KubeClient, jobset: dict[str, Any]) -> None:
    # The Job controller's part: four gated pods; the ungater pins them by rank.
    for completion in range(4):
        await client.create(gated_pod(jobset, completion))

    async def all_ungated() -> bool:
        pods = (await client.list("Pod", NS)).items
        return len(pods) == 4 and all(not p["spec"].get("schedulingGates") for p in pods)

    await eventually(all_ungated, what="every pod ungated")
    for completion, host in enumerate(["n1", "n1", "n2", "n2"]):
        pod = await client.get("Pod", f"llm-node-0-{completion}", NS)
        assert pod["spec"]["nodeSelector"] == {"pool": "a", HOSTNAME_LABEL: host}


async def complete_jobset(client: KubeClient) -> None:
    """The JobSet controller's part: the JobSet completes."""
    await client.patch(
        "JobSet",
        "llm",
        {
            "status": {
                "conditions": [
                    {
                        "type": "Completed",
                        "status": "True",
                        "reason": "AllJobsCompleted",
                        "message": "jobset completed successfully",
                        "lastTransitionTime": "2026-01-01T01:00:00Z",
                    }
                ],
                "replicatedJobsStatus": [
                    {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
                ],
            }
        },
        NS,
        status=True,
    )


async def check_completion_mirrored(client: KubeClient) -> None:
    # The JobSet completes; the TrainJob mirrors it.
    await complete_jobset(client)

    async def completed() -> bool:
        return condition(await client.get("TrainJob", "llm", NS), "Complete") is not None

    await eventually(completed, what="Complete mirrored into the TrainJob")
    job = await client.get("TrainJob", "llm", NS)
    complete = condition(job, "Complete")
    assert complete is not None
    assert (complete["status"], complete["reason"], complete["message"]) == (
        "True",
        "AllJobsCompleted",
        "jobset completed successfully",
    )
    assert job["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    ]


async def test_eviction_suspends_the_trainjob_and_deletes_its_jobset(fake_api: FakeApi) -> None:
    trainjob = seed_cluster(fake_api, nodes=2)
    async with launcher(fake_api) as (client, _):
        workload = await admit(client, fake_api, trainjob, [("n1", 2)])

        async def jobset_created() -> bool:
            return bool((await client.list("JobSet", NS)).items)

        await eventually(jobset_created, what="the JobSet")
        await client.patch("Workload", workload, {"status": EVICTED_STATUS}, NS, status=True)

        async def stopped() -> bool:
            job = await client.get("TrainJob", "llm", NS)
            suspended = condition(job, "Suspended")
            return (
                job["spec"].get("suspend") is True
                and not (await client.list("JobSet", NS)).items
                and suspended is not None
                and suspended["status"] == "True"
            )

        await eventually(stopped, what="the TrainJob suspended and its JobSet deleted")
        job = await client.get("TrainJob", "llm", NS)
        assert job["status"]["jobsStatus"] == []

        # Admitted again (say, elsewhere): a fresh JobSet with the new placement.
        await client.patch("Workload", workload, {"status": admitted_status([("n7", 2)])}, NS, status=True)

        async def resumed_again() -> bool:
            job = await client.get("TrainJob", "llm", NS)
            return job["spec"].get("suspend") is False and bool((await client.list("JobSet", NS)).items)

        await eventually(resumed_again, what="the TrainJob running again")


async def test_a_restarted_launcher_repeats_no_write_and_tolerates_existing_objects(fake_api: FakeApi) -> None:
    trainjob = seed_cluster(fake_api, nodes=2)
    # A PodGroup left by a launcher that died before creating the JobSet: its create answers 409.
    fake_api.server.seed(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "llm", "namespace": NS},
            "spec": {"minMember": 2},
        }
    )
    async with launcher(fake_api) as (client, _):
        await admit(client, fake_api, trainjob, [("n1", 2)])

        async def running() -> bool:
            job = await client.get("TrainJob", "llm", NS)
            return job["spec"].get("suspend") is False and condition(job, "Created") is not None

        await eventually(running, what="the TrainJob running")
    settled = len(fake_api.server.requests)
    async with launcher(fake_api) as (client, built):
        await asyncio.sleep(0.5)
        assert built.writes.counts.total() == 0, built.writes.counts
    assert writes_since(fake_api, settled) == []


async def test_a_status_write_refused_with_a_conflict_still_ends_complete(fake_api: FakeApi) -> None:
    # A 409 need not come with a newer TrainJob (a refusal by something in between, an injected
    # fault): the launcher looks again by itself rather than wait for an event that may not come.
    trainjob = seed_cluster(fake_api, nodes=2)
    async with launcher(fake_api) as (client, built):
        await admit(client, fake_api, trainjob, [("n1", 2)])

        async def running() -> bool:
            job = await client.get("TrainJob", "llm", NS)
            return job["spec"].get("suspend") is False and condition(job, "Created") is not None

        await eventually(running, what="the TrainJob running")
        conflicts = built.writes.conflicts
        refusal = fake_api.faults.fail("patch", "/trainjobs/llm/status", code=409, times=1)
        await check_completion_mirrored(client)
        assert refusal.remaining == 0
        assert built.writes.conflicts == conflicts + 1  # the refused write was the launcher's


class _RecordedWrites(ObjectWrites):
    """Writes that go nowhere: each is recorded instead."""

    def __init__(self) -> None:
        super().__init__(cast(KubeClient, None))
        self.made: list[str] = []

    async def create(self, document: dict[str, Any]) -> bool:
        self.made.append(f"create {document['kind']}")
        return True

    async def patch_status(self, kind: str, document: dict[str, Any], status: dict[str, Any]) -> bool:
        self.made.append(f"status {kind}")
        return True


async def test_a_sync_before_the_cache_shows_the_created_jobset_writes_nothing() -> None:
    # The TrainJob runs and is admitted, but the cache does not show the JobSet this launcher has
    # just created: without the expectation, this sync would POST the JobSet again (a 409) and
    # write the TrainJob's status without it, then again once the JobSet shows.
    running = dict(build_trainjob("llm", NS, nodes=2, trainer={"image": "trainer:1"}, queue="lq", suspend=False))
    running["metadata"]["uid"] = "uid-llm"
    workload = {**workload_doc(running), "status": admitted_status([("n1", 2)])}
    writes = _RecordedWrites()
    jobset_launcher = JobSetLauncher()
    ctx = LaunchContext("team/llm", TrainJobView(running), WorkloadView(workload), ClusterCache(), writes)
    assert ctx.admitted
    assert not ctx.suspended
    jobset_launcher._created[ctx.key] = time.monotonic()  # as _create leaves it
    assert await jobset_launcher.sync(ctx) == JOBSET_GONE_RECHECK
    assert writes.made == []


async def test_a_start_writes_the_trainjob_status_once_and_the_jobset_once(fake_api: FakeApi) -> None:
    # Until the cache shows the JobSet it just created, the launcher neither writes the TrainJob's
    # status without it (then again with it) nor POSTs the JobSet again into a 409.
    trainjob = seed_cluster(fake_api, nodes=2)
    async with launcher(fake_api) as (client, built):

        async def pending() -> bool:
            suspended = condition(await client.get("TrainJob", "llm", NS), "Suspended")
            return suspended is not None and suspended["reason"] == "Suspended"

        await eventually(pending, what="the queued TrainJob marked Suspended")
        start = len(fake_api.server.requests)
        await admit(client, fake_api, trainjob, [("n1", 2)])

        async def running() -> bool:
            job = await client.get("TrainJob", "llm", NS)
            return job["spec"].get("suspend") is False and condition(job, "Created") is not None

        await eventually(running, what="the TrainJob running with its JobSet created")
        await asyncio.sleep(0.5)  # whatever a second look would write, it has written by now
    writes = [
        f"{r.method} {r.path}"
        for r in fake_api.server.requests[start:]
        if r.method in ("POST", "PUT", "PATCH") and ("/trainjobs/" in r.path or r.path.endswith("/jobsets"))
    ]
    assert sum(1 for w in writes if w.startswith("PATCH") and w.endswith("/trainjobs/llm/status")) == 1, writes
    assert sum(1 for w in writes if w.startswith("POST") and w.endswith("/jobsets")) == 1, writes
    assert built.writes.conflicts == 0
