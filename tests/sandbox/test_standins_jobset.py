"""The stand-in controllers end to end over HTTP: JobSet → Jobs → pods → bound → Running → Succeeded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from builders import jobset, replicated_job
from fakeapi.fixtures import FakeApi
from sandbox_support import condition_of, kube, node

from sandbox.standins import COMPLETION_INDEX, EXIT_CODE_ANNOTATION, Standins
from scheduler.kube import KubeClient
from tests.eventually import eventually


@pytest.fixture
async def cluster(fake_api: FakeApi) -> AsyncIterator[tuple[KubeClient, Standins]]:
    for index in range(3):
        fake_api.server.seed(node(f"node-{index}", cpu="4"))
    async with kube(fake_api) as client, Standins(client, run_seconds=0.1) as standins:
        await standins.synced()
        yield client, standins


async def _jobset(client: KubeClient, name: str) -> dict[str, Any]:
    return await client.get("JobSet", name, "default")


async def _pods(client: KubeClient, selector: str) -> list[dict[str, Any]]:
    return (await client.list("Pod", "default", label_selector=selector)).items


async def test_a_jobset_runs_to_completion_with_jobsets_names_labels_and_status(
    cluster: tuple[KubeClient, Standins], fake_api: FakeApi
) -> None:
    client, standins = cluster
    await client.create(
        jobset(
            "train",
            "default",
            replicated_job("launcher"),
            replicated_job("workers", replicas=2, parallelism=2),
            network={"subdomain": "train-svc"},
        )
    )
    finished = await eventually(lambda: _completed(client, "train"), timeout=20, what="the JobSet to complete")
    assert condition_of(finished, "Completed") is not None
    assert condition_of(finished, "Completed")["reason"] == "AllJobsCompleted"  # type: ignore[index]
    assert finished["status"]["terminalState"] == "Completed"
    assert finished["status"]["replicatedJobsStatus"] == [
        {"name": "launcher", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0},
        {"name": "workers", "ready": 0, "succeeded": 2, "failed": 0, "active": 0, "suspended": 0},
    ]
    jobs = {j["metadata"]["name"]: j for j in (await client.list("Job", "default")).items}
    assert sorted(jobs) == ["train-launcher-0", "train-workers-0", "train-workers-1"]
    worker = jobs["train-workers-1"]
    labels = worker["metadata"]["labels"]
    assert labels["jobset.sigs.k8s.io/jobset-name"] == "train"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    assert labels["jobset.sigs.k8s.io/job-index"] == "1"
    assert labels["jobset.sigs.k8s.io/restart-attempt"] == "0"
    assert worker["metadata"]["annotations"]["jobset.sigs.k8s.io/job-index"] == "1"
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    assert condition_of(worker, "Complete")["reason"] == "CompletionsReached"  # type: ignore[index]
    assert worker["status"]["succeeded"] == 2
    assert worker["status"]["completedIndexes"] == "0-1"
    pods = await _pods(client, "jobset.sigs.k8s.io/replicatedjob-name=workers,jobset.sigs.k8s.io/job-index=1")
    assert sorted(p["metadata"]["labels"][COMPLETION_INDEX] for p in pods) == ["0", "1"]
    for pod in pods:
        index = pod["metadata"]["annotations"][COMPLETION_INDEX]
        assert pod["metadata"]["name"].startswith(f"train-workers-1-{index}-")
        assert len(pod["metadata"]["name"]) == len(f"train-workers-1-{index}-") + 5
        assert pod["spec"]["hostname"] == f"train-workers-1-{index}"
        assert pod["spec"]["subdomain"] == "train-svc"
        assert pod["spec"]["nodeName"].startswith("node-")
        assert pod["status"]["phase"] == "Succeeded"
        assert pod["metadata"]["ownerReferences"][0]["name"] == "train-workers-1"
    bindings = [r for r in fake_api.server.requests if r.path.endswith("/binding")]
    assert len(bindings) == 5
    assert standins.binder is not None
    assert standins.binder.bound == 5


async def _completed(client: KubeClient, name: str) -> dict[str, Any] | None:
    jobset = await _jobset(client, name)
    return jobset if condition_of(jobset, "Completed") else None


async def _restarted(client: KubeClient, name: str) -> dict[str, Any] | None:
    jobset = await _jobset(client, name)
    return jobset if (jobset.get("status") or {}).get("restarts") == 1 else None


async def test_a_failed_pod_under_max_restarts_restarts_the_jobset(cluster: tuple[KubeClient, Standins]) -> None:
    client, standins = cluster
    standins.runner.run_seconds = 2.0  # type: ignore[union-attr]  # time to fail a pod by hand
    await client.create(
        jobset("flaky", "default", replicated_job("workers", replicas=2), failurePolicy={"maxRestarts": 2})
    )
    running = await eventually(
        lambda: _running_pod(client, "flaky"), timeout=10, what="a running pod of the first attempt"
    )
    first_attempt = {p["metadata"]["uid"] for p in await _pods(client, "jobset.sigs.k8s.io/jobset-name=flaky")}
    await client.patch(
        "Pod",
        running["metadata"]["name"],
        {
            "status": {
                "phase": "Failed",
                "containerStatuses": [{"name": "node", "state": {"terminated": {"exitCode": 3}}}],
            }
        },
        "default",
        status=True,
    )
    await eventually(lambda: _restarted(client, "flaky"), timeout=10, what="the JobSet to restart")
    standins.runner.run_seconds = 0.1  # type: ignore[union-attr]
    finished = await eventually(
        lambda: _completed(client, "flaky"), timeout=20, what="the restarted JobSet to complete"
    )
    assert finished["status"]["restarts"] == 1
    assert finished["status"]["restartsCountTowardsMax"] == 1
    jobs = (await client.list("Job", "default", label_selector="jobset.sigs.k8s.io/jobset-name=flaky")).items
    assert {j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for j in jobs} == {"1"}
    now = {p["metadata"]["uid"] for p in await _pods(client, "jobset.sigs.k8s.io/jobset-name=flaky")}
    assert now
    assert not (now & first_attempt)


async def _running_pod(client: KubeClient, jobset: str) -> dict[str, Any] | None:
    for pod in await _pods(client, f"jobset.sigs.k8s.io/jobset-name={jobset}"):
        if pod["status"].get("phase") == "Running":
            return pod
    return None


async def test_a_failure_past_max_restarts_fails_the_jobset(cluster: tuple[KubeClient, Standins]) -> None:
    client, _ = cluster
    failing = replicated_job("workers", annotations={EXIT_CODE_ANNOTATION: "1"})
    await client.create(jobset("doomed", "default", failing, failurePolicy={"maxRestarts": 1}))
    await client.create(
        jobset("fragile", "default", replicated_job("workers", annotations={EXIT_CODE_ANNOTATION: "2"}))
    )

    async def failed(name: str) -> dict[str, Any] | None:
        jobset = await _jobset(client, name)
        return jobset if condition_of(jobset, "Failed") else None

    doomed = await eventually(lambda: failed("doomed"), timeout=20, what="the JobSet to fail")
    assert condition_of(doomed, "Failed")["reason"] == "ReachedMaxRestarts"  # type: ignore[index]
    assert doomed["status"]["restarts"] == 1
    assert doomed["status"]["terminalState"] == "Failed"
    fragile = await eventually(lambda: failed("fragile"), timeout=20, what="the JobSet without a policy to fail")
    assert condition_of(fragile, "Failed")["reason"] == "FailedJobs"  # type: ignore[index]
    assert "restarts" not in fragile["status"] or fragile["status"]["restarts"] == 0
    job = await client.get("Job", "fragile-workers-0", "default")
    assert condition_of(job, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]


async def test_success_policy_any_completes_on_the_first_target(cluster: tuple[KubeClient, Standins]) -> None:
    client, _ = cluster
    slow = replicated_job("server", annotations={"trainyard.io/sandbox-run-seconds": "30"})
    await client.create(
        jobset(
            "any",
            "default",
            slow,
            replicated_job("driver"),
            successPolicy={"operator": "Any", "targetReplicatedJobs": ["driver"]},
        )
    )
    finished = await eventually(lambda: _completed(client, "any"), timeout=10, what="Any to complete")
    statuses = {s["name"]: s for s in finished["status"]["replicatedJobsStatus"]}
    assert statuses["driver"]["succeeded"] == 1
    assert statuses["server"]["succeeded"] == 0
    # the server's Job was still running: a finished JobSet deletes its active Jobs
    await eventually(lambda: _missing(client, "Job", "any-server-0"), timeout=10, what="the active Job to be deleted")


async def _missing(client: KubeClient, kind: str, name: str) -> bool:
    return name not in {i["metadata"]["name"] for i in (await client.list(kind, "default")).items}


async def test_suspend_deletes_the_pods_and_resume_recreates_them(cluster: tuple[KubeClient, Standins]) -> None:
    client, standins = cluster
    standins.runner.run_seconds = 30.0  # type: ignore[union-attr]
    await client.create(jobset("paused", "default", replicated_job("workers", replicas=2), suspend=True))

    async def suspended() -> dict[str, Any] | None:
        paused = await _jobset(client, "paused")
        found = condition_of(paused, "Suspended")
        return paused if found and found["status"] == "True" else None

    paused = await eventually(suspended, timeout=10, what="Suspended=True")
    assert condition_of(paused, "Suspended")["reason"] == "SuspendedJobs"  # type: ignore[index]
    jobs = (await client.list("Job", "default")).items
    assert len(jobs) == 2
    assert all(j["spec"]["suspend"] for j in jobs)
    assert await _pods(client, "jobset.sigs.k8s.io/jobset-name=paused") == []
    # resume with a node selector added while suspended (as Kueue or trainyard's launcher does)
    await client.patch(
        "JobSet",
        "paused",
        {
            "spec": {
                "suspend": False,
                "replicatedJobs": [
                    replicated_job("workers", replicas=2, nodeSelector={"kubernetes.io/hostname": "node-2"})
                ],
            }
        },
        "default",
    )
    running = await eventually(lambda: _all_running(client, "paused", 2), timeout=10, what="the resumed pods to run")
    assert {p["spec"]["nodeName"] for p in running} == {"node-2"}
    resumed = await _jobset(client, "paused")
    assert condition_of(resumed, "Suspended")["reason"] == "ResumeJobs"  # type: ignore[index]
    assert condition_of(resumed, "Suspended")["status"] == "False"  # type: ignore[index]
    await client.patch("JobSet", "paused", {"spec": {"suspend": True}}, "default")
    await eventually(lambda: _no_live_pods(client, "paused"), timeout=10, what="suspension to delete the running pods")

    async def job_suspended() -> bool:
        # the Job controller deletes the pods, then writes the condition: a reader may see the first alone
        job = await client.get("Job", "paused-workers-0", "default")
        found = condition_of(job, "Suspended")
        return found is not None and found["status"] == "True"

    await eventually(job_suspended, timeout=10, what="the Job's Suspended=True")


async def _all_running(client: KubeClient, jobset: str, count: int) -> list[dict[str, Any]] | None:
    pods = await _pods(client, f"jobset.sigs.k8s.io/jobset-name={jobset}")
    return pods if len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods) else None


async def _no_live_pods(client: KubeClient, jobset: str) -> bool:
    return await _pods(client, f"jobset.sigs.k8s.io/jobset-name={jobset}") == []
