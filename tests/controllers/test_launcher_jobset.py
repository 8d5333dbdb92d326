"""The ``jobset`` launcher and the pod ungater against the fake API server (real kubernetes-asyncio client).

The Workloads are written here as the queue controller writes them (a committed admission with
a compressed topologyAssignment), so these tests need no queue controller; the test plays the
JobSet controller's part (creating the gated pods, reporting JobSet status).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import yaml
from fakeapi.fixtures import FakeApi

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from scheduler.api.topology_assignment import HOSTNAME_LABEL, encode_topology_assignment
from scheduler.controllers.constants import (
    MANAGED_LABEL,
    PODSET_LABEL,
    TAS_LABEL,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from scheduler.controllers.launcher import LauncherMode
from scheduler.controllers.launcher_controllers import build_launcher_controllers, launcher_watches
from scheduler.controllers.manager import ControllerManager
from scheduler.kube import InformerSettings, KubeClient
from scheduler.kube.backoff import Backoff
from scheduler.trainjob import workload_for_trainjob

ROOT = Path(__file__).resolve().parents[2]
FAST_INFORMERS = InformerSettings(watch_timeout_seconds=30, inactivity_timeout=30.0, backoff=Backoff(0.01, 0.05))
NS = "team-a"
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "train", "effect": "NoSchedule"}


async def eventually(check: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def launcher(fake_api: FakeApi, mode: LauncherMode = "jobset") -> AsyncIterator[tuple[KubeClient, Any]]:
    api_client = await fake_api.api_client()
    client = KubeClient(api_client)
    manager = ControllerManager(client, launcher_watches(mode), leader=None, informer_settings=FAST_INFORMERS)
    built = build_launcher_controllers(mode, client, manager.cache, workers=2)
    for controller, enqueue in built.registrations:
        manager.add(controller, enqueue=enqueue)
    task = asyncio.create_task(manager.run())
    try:
        yield client, built
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await api_client.close()


def runtime_doc() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "manifests/runtimes/torch_distributed.yaml").read_text()))


def seed_cluster(fake_api: FakeApi, *, nodes: int = 4) -> dict[str, Any]:
    """The runtime, the flavor and a queued, suspended TrainJob of ``nodes`` pods; returns the TrainJob."""
    fake_api.server.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    fake_api.server.seed(runtime_doc())
    fake_api.server.seed(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "rack-flavor"},
            "spec": {"nodeLabels": {"pool": "a"}, "tolerations": [TOLERATION], "topologyName": "default"},
        }
    )
    return fake_api.server.seed(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "llm", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"numNodes": nodes, "image": "trainer:1"},
                "suspend": True,
            },
        }
    )


def workload_doc(trainjob: dict[str, Any]) -> dict[str, Any]:
    """The Workload the queue controller creates for ``trainjob`` (pod sets from its render)."""
    model = TrainJob.model_validate(trainjob)
    workload = workload_for_trainjob(model, ClusterTrainingRuntime.model_validate(runtime_doc())).to_dict()
    workload.pop("status", None)
    workload["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": model.metadata.name,
            "uid": model.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return workload


def admitted_status(hosts: list[tuple[str, int]]) -> dict[str, Any]:
    """A committed admission of pod set ``node`` onto ``hosts`` (hostname, pods), in rank order."""
    count = sum(pods for _, pods in hosts)
    return {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "node",
                    "flavors": {"cpu": "rack-flavor"},
                    "resourceUsage": {"cpu": str(count)},
                    "count": count,
                    "topologyAssignment": encode_topology_assignment(
                        [HOSTNAME_LABEL], [([host], pods) for host, pods in hosts]
                    ),
                }
            ],
        },
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "ok",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "ok",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    }


EVICTED_STATUS = {
    "admission": None,
    "conditions": [
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Preempted",
            "message": "p",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        },
        {
            "type": "Admitted",
            "status": "False",
            "reason": "Preempted",
            "message": "p",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        },
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "Preempted to accommodate a workload",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        },
        {
            "type": "Preempted",
            "status": "True",
            "reason": "InClusterQueue",
            "message": "p",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        },
    ],
}


async def admit(client: KubeClient, fake_api: FakeApi, trainjob: dict[str, Any], hosts: list[tuple[str, int]]) -> str:
    workload = fake_api.server.seed(workload_doc(trainjob))
    name = workload["metadata"]["name"]
    await client.patch("Workload", name, {"status": admitted_status(hosts)}, NS, status=True)
    return str(name)


def gated_pod(jobset: dict[str, Any], completion: int, job_index: int = 0) -> dict[str, Any]:
    """A pod as the Job controller creates it from the JobSet's ``node`` template."""
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    labels = {
        **template["metadata"]["labels"],
        "jobset.sigs.k8s.io/jobset-name": jobset["metadata"]["name"],
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/job-index": str(job_index),
        "batch.kubernetes.io/job-completion-index": str(completion),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{jobset['metadata']['name']}-node-{job_index}-{completion}",
            "namespace": NS,
            "labels": labels,
            "annotations": {
                **template["metadata"]["annotations"],
                "batch.kubernetes.io/job-completion-index": str(completion),
            },
        },
        "spec": template["spec"],
    }


def condition(document: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for entry in (document.get("status") or {}).get("conditions") or ():
        if entry.get("type") == kind:
            return dict(entry)
    return None


def writes_since(fake_api: FakeApi, start: int) -> list[str]:
    """The non-status writes the server answered since request ``start``."""
    return [
        f"{r.method} {r.path}"
        for r in fake_api.server.requests[start:]
        if r.method in ("POST", "PUT", "PATCH", "DELETE") and not r.path.endswith("/status")
    ]


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


async def check_completion_mirrored(client: KubeClient) -> None:
    # The JobSet controller's part: the JobSet completes; the TrainJob mirrors it.
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
