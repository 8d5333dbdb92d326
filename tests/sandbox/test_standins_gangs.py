"""Gangs in the stand-ins as the real JobSet controller and coscheduling plugin run them (issue 32).

A DeepSpeed-shaped JobSet (``node`` workers, a ``launcher`` that ``dependsOn`` them being Ready,
success when the launcher succeeds): the launcher's Job appears only once every node pod is
ready, so the launcher never runs, or finishes, before its nodes; when the JobSet completes, the
node Job that already finished stays, with its pods. A PodGroup's status walks the coscheduling
plugin's phases with its counts (``kubectl get podgroups`` shows PHASE, RUNNING, SUCCEEDED).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from builders import jobset, replicated_job
from fakeapi.fixtures import FakeApi
from sandbox_support import condition_of, kube, node

from sandbox.standins import RUN_SECONDS_ANNOTATION, Standins
from sandbox.standins.podgroups import next_status
from scheduler.kube import KubeClient
from tests.eventually import eventually

GROUP = "scheduling.x-k8s.io/pod-group"


async def _jobs(client: KubeClient) -> dict[str, dict[str, Any]]:
    return {j["metadata"]["name"]: j for j in (await client.list("Job", "default")).items}


async def test_the_launcher_waits_for_its_nodes_and_finished_nodes_stay(fake_api: FakeApi) -> None:
    for index in range(2):
        fake_api.server.seed(node(f"node-{index}", cpu="4"))
    nodes = replicated_job("node", parallelism=2, annotations={RUN_SECONDS_ANNOTATION: "0.6"})
    launcher = replicated_job("launcher", annotations={RUN_SECONDS_ANNOTATION: "0.1"})
    launcher["dependsOn"] = [{"name": "node", "status": "Ready"}]
    spec = jobset(
        "ds", "default", nodes, launcher, successPolicy={"operator": "All", "targetReplicatedJobs": ["launcher"]}
    )
    async with kube(fake_api) as client, Standins(client, start_seconds=0.3, run_seconds=0.1) as standins:
        await standins.synced()
        await client.create(spec)
        await eventually(lambda: _jobs(client), what="the node Job")
        await asyncio.sleep(0.2)  # node pods exist, not yet Running and Ready
        assert sorted(await _jobs(client)) == ["ds-node-0"]

        async def launched() -> dict[str, Any] | None:
            return (await _jobs(client)).get("ds-launcher-0")

        created = await eventually(launched, timeout=10.0, what="the launcher Job")
        node_job = (await _jobs(client))["ds-node-0"]
        assert node_job["status"].get("ready", 0) + node_job["status"].get("succeeded", 0) == 2
        assert created["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "launcher"

        async def completed() -> dict[str, Any] | None:
            found = await client.get("JobSet", "ds", "default")
            return found if condition_of(found, "Completed") else None

        await eventually(completed, timeout=10.0, what="the JobSet to complete")
        await eventually(lambda: _all_finished(client), timeout=10.0, what="the node Job to finish")
        await asyncio.sleep(0.3)  # a stand-in that deleted finished Jobs would have done so by now
        jobs = await _jobs(client)
        assert sorted(jobs) == ["ds-launcher-0", "ds-node-0"]
        pods = (await client.list("Pod", "default", label_selector="jobset.sigs.k8s.io/replicatedjob-name=node")).items
        assert sorted(p["status"]["phase"] for p in pods) == ["Succeeded", "Succeeded"]


async def _all_finished(client: KubeClient) -> bool:
    jobs = await _jobs(client)
    return bool(jobs) and all(condition_of(j, "Complete") for j in jobs.values())


def _pod(name: str, phase: str = "Pending", node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node_name:
        spec["nodeName"] = node_name
    metadata = {"name": name, "namespace": "ns", "ownerReferences": [{"name": "job-b"}, {"name": "job-a"}]}
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


GROUP_OF_TWO: dict[str, Any] = {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 2}}


@pytest.mark.parametrize(
    ("status", "pods", "wanted"),
    [
        ({}, [], {"phase": "Pending"}),
        ({"phase": "Pending"}, [_pod("a")], {"phase": "Pending"}),
        ({"phase": "Pending"}, [_pod("a"), _pod("b")], {"phase": "PreScheduling", "occupiedBy": "ns/job-a,ns/job-b"}),
        (
            {"phase": "PreScheduling"},
            [_pod("a", node_name="n"), _pod("b")],
            {"phase": "Scheduling", "scheduled": 1, "running": 0, "succeeded": 0, "failed": 0},
        ),
        (
            {"phase": "Scheduling", "scheduled": 1},
            [_pod("a", "Running", "n"), _pod("b", node_name="n")],
            {"phase": "Scheduled", "scheduled": 2, "running": 1, "succeeded": 0, "failed": 0},
        ),
        (
            {"phase": "Scheduled", "scheduled": 2},
            [_pod("a", "Running", "n"), _pod("b", "Succeeded", "n")],
            {"phase": "Running", "scheduled": 2, "running": 1, "succeeded": 1, "failed": 0},
        ),
        (
            {"phase": "Running", "scheduled": 2},
            [_pod("a", "Failed", "n"), _pod("b", "Succeeded", "n")],
            {"phase": "Failed", "scheduled": 2, "running": 0, "succeeded": 1, "failed": 1},
        ),
        (
            {"phase": "Running", "scheduled": 2},
            [_pod("a", "Succeeded", "n"), _pod("b", "Succeeded", "n")],
            {"phase": "Finished", "scheduled": 2, "running": 0, "succeeded": 2, "failed": 0},
        ),
        (
            {"phase": "Running", "scheduled": 2},
            [],
            {"phase": "Pending", "scheduled": 2, "running": 0, "succeeded": 0, "failed": 0},
        ),
    ],
    ids=[
        "new-is-pending",
        "too-few-pods-stay-pending",
        "enough-pods-prescheduling",
        "one-bound-scheduling",
        "all-bound-scheduled",
        "running-and-succeeded-reach-min",
        "a-failure-fails-the-group",
        "all-succeeded-finished",
        "pods-gone-back-to-pending",
    ],
)
def test_podgroup_status_walks_the_coscheduling_phases(
    status: dict[str, Any], pods: list[dict[str, Any]], wanted: dict[str, Any]
) -> None:
    found = next_status({**GROUP_OF_TWO, "status": status}, pods)
    found.pop("scheduleStartTime", None)
    assert found == wanted


async def test_kubectl_columns_of_a_podgroup_are_filled(fake_api: FakeApi) -> None:
    fake_api.server.seed(node("node-0", cpu="4"))
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"minMember": 2},
    }
    workers = replicated_job("workers", parallelism=2)
    workers["template"]["spec"]["template"]["metadata"]["labels"] = {GROUP: "train"}
    async with kube(fake_api) as client, Standins(client, run_seconds=0.1) as standins:
        await standins.synced()
        await client.create(group)
        await client.create(jobset("train", "default", workers))

        async def finished() -> dict[str, Any] | None:
            found = await client.get("PodGroup", "train", "default")
            return found if (found.get("status") or {}).get("phase") == "Finished" else None

        done = await eventually(finished, timeout=10.0, what="the PodGroup to finish")
        assert {k: done["status"][k] for k in ("scheduled", "running", "succeeded", "failed")} == {
            "scheduled": 2,
            "running": 0,
            "succeeded": 2,
            "failed": 0,
        }
        assert done["status"]["occupiedBy"] == "default/train-workers-0"
