"""The Job stand-in on its own, and all stand-ins under injected API faults."""

from __future__ import annotations

from typing import Any

from builders import jobset, replicated_job
from fakeapi.fixtures import FakeApi
from sandbox_support import condition_of, kube, node

from sandbox.standins import EXIT_CODE_ANNOTATION, Standins
from sandbox.standins.job import compress_indexes
from scheduler.kube import KubeClient
from tests.eventually import eventually


def batch_job(
    name: str, *, indexed: bool, completions: int, parallelism: int, **pod_annotations: str
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "completionMode": "Indexed" if indexed else "NonIndexed",
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimit": 1,
            "template": {
                "metadata": {"annotations": pod_annotations},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]},
            },
        },
    }


async def _finished(client: KubeClient, name: str) -> dict[str, Any] | None:
    job = await client.get("Job", name, "default")
    return job if condition_of(job, "Complete") or condition_of(job, "Failed") else None


def test_completed_indexes_are_compressed_as_the_job_controller_writes_them() -> None:
    assert compress_indexes({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    assert compress_indexes(set()) == ""
    assert compress_indexes({4}) == "4"


async def test_jobs_run_their_pods_and_a_failing_job_stops_at_its_backoff_limit(fake_api: FakeApi) -> None:
    fake_api.server.seed(node("n-1"))
    async with kube(fake_api) as client, Standins(client, jobset=False, run_seconds=0.05) as standins:
        await client.create(batch_job("plain", indexed=False, completions=3, parallelism=2))
        await client.create(
            batch_job("failing", indexed=True, completions=2, parallelism=2, **{EXIT_CODE_ANNOTATION: "1"})
        )
        plain = await eventually(lambda: _finished(client, "plain"), timeout=15, what="the NonIndexed Job")
        failing = await eventually(lambda: _finished(client, "failing"), timeout=15, what="the failing Job")
        assert standins.job is not None
        pods = (await client.list("Pod", "default", label_selector="batch.kubernetes.io/job-name=plain")).items
    assert condition_of(plain, "Complete")["reason"] == "CompletionsReached"  # type: ignore[index]
    assert plain["status"]["succeeded"] == 3
    assert plain["status"]["active"] == 0
    assert len(pods) == 3
    assert all(p["metadata"]["name"].startswith("plain-") for p in pods)
    assert condition_of(failing, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    assert condition_of(failing, "FailureTarget") is not None
    # backoffLimit 1: the second failure fails the Job, so at least one failed index was replaced
    assert failing["status"]["failed"] >= 2
    assert failing["status"]["succeeded"] == 0


async def test_the_stand_ins_finish_a_jobset_while_the_server_injects_faults(fake_api: FakeApi) -> None:
    for index in range(2):
        fake_api.server.seed(node(f"n-{index}"))
    async with kube(fake_api) as client, Standins(client, run_seconds=0.05) as standins:
        await standins.synced()
        fake_api.faults.random(0.15, seed=11, retry_after=0)
        fake_api.server.seed(
            jobset("chaos", "default", replicated_job("a", replicas=2, parallelism=2), replicated_job("b"))
        )

        async def completed() -> dict[str, Any] | None:
            jobset = fake_api.store.get(
                fake_api.server.type_of("jobset.x-k8s.io/v1alpha2", "JobSet"), "default", "chaos"
            )
            return jobset if condition_of(jobset, "Completed") else None

        finished = await eventually(completed, timeout=60, what="the JobSet to complete under faults")
        fake_api.faults.calm()
    assert finished["status"]["replicatedJobsStatus"][0]["succeeded"] == 2
    injected = fake_api.faults.injected
    assert sum(injected.values()) > 0
    # each pod was created once: the Job stand-in's expectations hold through conflicts and dropped watches
    pods = list(fake_api.store.items(fake_api.server.type_of("v1", "Pod"), "default"))
    assert len(pods) == 5
