"""/mutate/trainjobs and /validate/trainjobs over HTTPS with upstream-shaped TrainJobs."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from webhook_support import Webhook, apply_patch, review

QUEUE = "kueue.x-k8s.io/queue-name"
PRIORITY = "kueue.x-k8s.io/priority-class"


def trainjob(
    name: str = "mnist",
    namespace: str = "team-a",
    *,
    labels: dict[str, str] | None = None,
    runtime: str = "torch-distributed",
    kind: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A TrainJob as kubeflow/trainer's examples write it."""
    runtime_ref: dict[str, Any] = {"name": runtime}
    if kind is not None:
        runtime_ref["kind"] = kind
    body: dict[str, Any] = {
        "runtimeRef": runtime_ref,
        "trainer": {
            "numNodes": 2,
            "resourcesPerNode": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"}},
        },
    }
    body.update(spec)
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": metadata, "spec": body}


# ------------------------------------------------------------------------------------- mutation


async def test_queue_defaults_to_the_namespace_default_local_queue_and_job_is_suspended(webhook: Webhook) -> None:
    job = trainjob()
    response = await webhook.admit("/mutate/trainjobs", review(job))
    assert response["allowed"] is True
    patched = apply_patch(job, response)
    assert patched["metadata"]["labels"][QUEUE] == "default"
    assert patched["spec"]["suspend"] is True
    assert patched["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert patched["spec"]["trainer"] == job["spec"]["trainer"]


async def test_explicit_queue_is_kept_and_suspended(webhook: Webhook) -> None:
    job = trainjob(namespace="team-b", labels={QUEUE: "training"})
    patched = apply_patch(job, await webhook.admit("/mutate/trainjobs", review(job)))
    assert patched["metadata"]["labels"] == {QUEUE: "training"}
    assert patched["spec"]["suspend"] is True


async def test_namespace_without_default_queue_is_not_queued(webhook: Webhook) -> None:
    job = trainjob(namespace="team-b", kind="ClusterTrainingRuntime")
    job["spec"]["runtimeRef"]["apiGroup"] = "trainer.kubeflow.org"
    response = await webhook.admit("/mutate/trainjobs", review(job))
    assert response["allowed"] is True
    assert "patch" not in response  # nothing to change: no queue, so no suspend either


async def test_mutation_is_idempotent(webhook: Webhook) -> None:
    job = trainjob()
    patched = apply_patch(job, await webhook.admit("/mutate/trainjobs", review(job)))
    again = await webhook.admit("/mutate/trainjobs", review(patched))
    assert "patch" not in again


async def test_updates_are_not_mutated(webhook: Webhook) -> None:
    job = trainjob()
    response = await webhook.admit("/mutate/trainjobs", review(job, operation="UPDATE", old=job))
    assert response["allowed"] is True
    assert "patch" not in response


async def test_mutating_a_non_trainjob_is_denied(webhook: Webhook) -> None:
    job = trainjob()
    job["kind"] = "PyTorchJob"
    response = await webhook.admit("/mutate/trainjobs", review(job))
    assert response["allowed"] is False
    assert "expected a trainer.kubeflow.org/v1alpha1 TrainJob" in response["status"]["message"]


# ----------------------------------------------------------------------------------- validation


async def test_valid_queued_trainjob_is_allowed(webhook: Webhook) -> None:
    job = trainjob(labels={QUEUE: "default", PRIORITY: "high"}, suspend=True)
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is True, response


async def test_unqueued_trainjob_on_a_namespaced_runtime_is_allowed(webhook: Webhook) -> None:
    job = trainjob(runtime="torch-rack", kind="TrainingRuntime")
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is True, response


CREATE_DENIALS = [
    pytest.param(
        trainjob(labels={QUEUE: "Team_Queue"}),
        "metadata.labels[kueue.x-k8s.io/queue-name]: 'Team_Queue' must be a DNS-1123 subdomain",
        id="queue-name-not-dns-subdomain",
    ),
    pytest.param(
        trainjob(labels={QUEUE: "missing"}),
        "LocalQueue 'missing' does not exist in the job's namespace (known: default)",
        id="queue-does-not-exist",
    ),
    pytest.param(
        trainjob(labels={QUEUE: "default", PRIORITY: "urgent"}),
        "WorkloadPriorityClass 'urgent' does not exist (known: high)",
        id="priority-class-does-not-exist",
    ),
    pytest.param(
        trainjob(labels={QUEUE: "default", "kueue.x-k8s.io/max-exec-time-seconds": "0"}),
        "must be an integer greater than 0, got '0'",
        id="max-exec-time-not-positive",
    ),
    pytest.param(
        trainjob(runtime="no-such-runtime"),
        "spec.runtimeRef: ClusterTrainingRuntime 'no-such-runtime' does not exist",
        id="runtime-missing",
    ),
    pytest.param(
        trainjob(runtime="torch-rack", kind="TrainingRuntime", namespace="team-b"),
        "TrainingRuntime 'torch-rack' does not exist",
        id="namespaced-runtime-from-another-namespace",
    ),
    pytest.param(
        trainjob(trainer={"numNodes": 0}),
        "spec.trainer.numNodes: 0 is not accepted",
        id="zero-nodes",
    ),
    pytest.param(
        trainjob(trainer={"env": [{"name": "PET_NNODES", "value": "3"}]}),
        "spec.trainer.env",
        id="reserved-torch-env",
    ),
    pytest.param(
        trainjob(name="Bad_Name"),
        "metadata.name: 'Bad_Name' is not accepted",
        id="name-not-rfc1035",
    ),
    pytest.param(
        trainjob(trainer={"numNodes": "two"}),
        "spec.trainer.numNodes",
        id="num-nodes-not-an-integer",
    ),
]


@pytest.mark.parametrize(("job", "expected"), CREATE_DENIALS)
async def test_invalid_trainjobs_are_denied(webhook: Webhook, job: dict[str, Any], expected: str) -> None:
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert message.startswith('TrainJob "team-')
    assert expected in message, message


def running(job: dict[str, Any]) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["spec"]["suspend"] = False
    return job


UPDATE_CASES = [
    pytest.param(
        running(trainjob(labels={QUEUE: "default"})),
        running(trainjob(labels={QUEUE: "other"})),
        "queue-name]: field is immutable while the job is not suspended",
        id="queue-change-while-running",
    ),
    pytest.param(
        running(trainjob(labels={QUEUE: "default"})),
        running(trainjob(labels={QUEUE: "default", PRIORITY: "high"})),
        "WorkloadPriorityClass cannot be added to a running job",
        id="priority-added-while-running",
    ),
    pytest.param(
        trainjob(labels={QUEUE: "default", PRIORITY: "high"}, suspend=True),
        trainjob(labels={QUEUE: "default"}, suspend=True),
        "WorkloadPriorityClass cannot be removed",
        id="priority-removed",
    ),
    pytest.param(
        running(trainjob(labels={QUEUE: "default", "kueue.x-k8s.io/max-exec-time-seconds": "60"})),
        running(trainjob(labels={QUEUE: "default", "kueue.x-k8s.io/max-exec-time-seconds": "120"})),
        "max-exec-time-seconds]: field is immutable while the job is not suspended",
        id="max-exec-time-change-while-running",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), UPDATE_CASES)
async def test_kueue_update_rules(webhook: Webhook, old: dict[str, Any], new: dict[str, Any], expected: str) -> None:
    response = await webhook.admit("/validate/trainjobs", review(new, operation="UPDATE", old=old))
    assert response["allowed"] is False
    assert expected in response["status"]["message"]


async def test_queue_may_change_while_suspended(webhook: Webhook) -> None:
    old = trainjob(labels={QUEUE: "retired-queue"}, suspend=True)
    moved = trainjob(labels={QUEUE: "default"}, suspend=True)
    response = await webhook.admit("/validate/trainjobs", review(moved, operation="UPDATE", old=old))
    assert response["allowed"] is True
    response = await webhook.admit("/validate/trainjobs", review(running(moved), operation="UPDATE", old=old))
    assert response["allowed"] is False


async def test_kueue_unsuspending_an_admitted_job_is_allowed(webhook: Webhook) -> None:
    old = trainjob(labels={QUEUE: "default", PRIORITY: "high"}, suspend=True)
    new = running(old)
    response = await webhook.admit("/validate/trainjobs", review(new, operation="UPDATE", old=old))
    assert response["allowed"] is True


async def test_deprecated_runtime_reference_warns(webhook: Webhook, cache: Any) -> None:
    runtime = cache.get("ClusterTrainingRuntime", "torch-distributed")
    runtime.metadata.labels["trainer.kubeflow.org/support"] = "deprecated"
    response = await webhook.admit("/validate/trainjobs", review(trainjob()))
    assert response["allowed"] is True
    assert response["warnings"] == [
        'Referenced ClusterTrainingRuntime "torch-distributed" is deprecated and will be removed in a future release'
    ]
