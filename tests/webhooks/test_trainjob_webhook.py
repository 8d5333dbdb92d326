"""/mutate/trainjobs and /validate/trainjobs over HTTPS with upstream-shaped TrainJobs."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from webhook_support import PRIORITY, QUEUE, Webhook, apply_patch, mnist_job, review, running

# ------------------------------------------------------------------------------------- mutation


async def test_queue_defaults_to_the_namespace_default_local_queue_and_job_is_suspended(webhook: Webhook) -> None:
    job = mnist_job()
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
    job = mnist_job(namespace="team-b", labels={QUEUE: "training"})
    patched = apply_patch(job, await webhook.admit("/mutate/trainjobs", review(job)))
    assert patched["metadata"]["labels"] == {QUEUE: "training"}
    assert patched["spec"]["suspend"] is True


async def test_namespace_without_default_queue_is_not_queued(webhook: Webhook) -> None:
    # As the API server sends it: Trainer's CRD defaults (apiGroup, suspend, managedBy) applied.
    job = mnist_job(namespace="team-b", runtime_kind="ClusterTrainingRuntime", suspend=False)
    job["spec"]["runtimeRef"]["apiGroup"] = "trainer.kubeflow.org"
    job["spec"]["managedBy"] = "trainer.kubeflow.org/trainjob-controller"
    response = await webhook.admit("/mutate/trainjobs", review(job))
    assert response["allowed"] is True
    assert "patch" not in response  # nothing to change: no queue, so no suspend either


async def test_mutation_is_idempotent(webhook: Webhook) -> None:
    job = mnist_job()
    patched = apply_patch(job, await webhook.admit("/mutate/trainjobs", review(job)))
    again = await webhook.admit("/mutate/trainjobs", review(patched))
    assert "patch" not in again


async def test_updates_are_not_mutated(webhook: Webhook) -> None:
    job = mnist_job()
    response = await webhook.admit("/mutate/trainjobs", review(job, operation="UPDATE", old=job))
    assert response["allowed"] is True
    assert "patch" not in response


async def test_mutating_a_non_trainjob_is_denied(webhook: Webhook) -> None:
    job = mnist_job()
    job["kind"] = "PyTorchJob"
    response = await webhook.admit("/mutate/trainjobs", review(job))
    assert response["allowed"] is False
    assert "expected a trainer.kubeflow.org/v1alpha1 TrainJob" in response["status"]["message"]


# ----------------------------------------------------------------------------------- validation


async def test_valid_queued_trainjob_is_allowed(webhook: Webhook) -> None:
    job = mnist_job(labels={QUEUE: "default", PRIORITY: "high"}, suspend=True)
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is True, response


async def test_unqueued_trainjob_on_a_namespaced_runtime_is_allowed(webhook: Webhook) -> None:
    job = mnist_job(runtime="torch-rack", runtime_kind="TrainingRuntime")
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is True, response


CREATE_DENIALS = [
    pytest.param(
        mnist_job(labels={QUEUE: "Team_Queue"}),
        "metadata.labels[kueue.x-k8s.io/queue-name]: 'Team_Queue' must be a DNS-1123 subdomain",
        id="queue-name-not-dns-subdomain",
    ),
    pytest.param(
        mnist_job(labels={QUEUE: "missing"}),
        "LocalQueue 'missing' does not exist in the job's namespace (known: default)",
        id="queue-does-not-exist",
    ),
    pytest.param(
        mnist_job(labels={QUEUE: "default", PRIORITY: "urgent"}),
        "WorkloadPriorityClass 'urgent' does not exist (known: high)",
        id="priority-class-does-not-exist",
    ),
    pytest.param(
        mnist_job(labels={QUEUE: "default", "kueue.x-k8s.io/max-exec-time-seconds": "0"}),
        "must be an integer greater than 0, got '0'",
        id="max-exec-time-not-positive",
    ),
    pytest.param(
        mnist_job(runtime="no-such-runtime"),
        "spec.runtimeRef: ClusterTrainingRuntime 'no-such-runtime' does not exist",
        id="runtime-missing",
    ),
    pytest.param(
        mnist_job(runtime="torch-rack", runtime_kind="TrainingRuntime", namespace="team-b"),
        "TrainingRuntime 'torch-rack' does not exist",
        id="namespaced-runtime-from-another-namespace",
    ),
    pytest.param(
        mnist_job(trainer={"numNodes": 0}),
        "spec.trainer.numNodes: 0 is not accepted",
        id="zero-nodes",
    ),
    pytest.param(
        mnist_job(trainer={"env": [{"name": "PET_NNODES", "value": "3"}]}),
        "spec.trainer.env",
        id="reserved-torch-env",
    ),
    pytest.param(
        mnist_job(name="Bad_Name"),
        "metadata.name: 'Bad_Name' is not accepted",
        id="name-not-rfc1035",
    ),
    pytest.param(
        mnist_job(trainer={"numNodes": "two"}),
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


UPDATE_CASES = [
    pytest.param(
        running(mnist_job(labels={QUEUE: "default"})),
        running(mnist_job(labels={QUEUE: "other"})),
        "queue-name]: field is immutable while the job is not suspended",
        id="queue-change-while-running",
    ),
    pytest.param(
        running(mnist_job(labels={QUEUE: "default"})),
        running(mnist_job(labels={QUEUE: "default", PRIORITY: "high"})),
        "WorkloadPriorityClass cannot be added to a running job",
        id="priority-added-while-running",
    ),
    pytest.param(
        mnist_job(labels={QUEUE: "default", PRIORITY: "high"}, suspend=True),
        mnist_job(labels={QUEUE: "default"}, suspend=True),
        "WorkloadPriorityClass cannot be removed",
        id="priority-removed",
    ),
    pytest.param(
        running(mnist_job(labels={QUEUE: "default", "kueue.x-k8s.io/max-exec-time-seconds": "60"})),
        running(mnist_job(labels={QUEUE: "default", "kueue.x-k8s.io/max-exec-time-seconds": "120"})),
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
    old = mnist_job(labels={QUEUE: "retired-queue"}, suspend=True)
    moved = mnist_job(labels={QUEUE: "default"}, suspend=True)
    response = await webhook.admit("/validate/trainjobs", review(moved, operation="UPDATE", old=old))
    assert response["allowed"] is True
    response = await webhook.admit("/validate/trainjobs", review(running(moved), operation="UPDATE", old=old))
    assert response["allowed"] is False


async def test_kueue_unsuspending_an_admitted_job_is_allowed(webhook: Webhook) -> None:
    old = mnist_job(labels={QUEUE: "default", PRIORITY: "high"}, suspend=True)
    new = running(old)
    response = await webhook.admit("/validate/trainjobs", review(new, operation="UPDATE", old=old))
    assert response["allowed"] is True


async def test_deprecated_runtime_reference_warns(webhook: Webhook, cache: Any) -> None:
    runtime = cache.get("ClusterTrainingRuntime", "torch-distributed")
    runtime.metadata.labels["trainer.kubeflow.org/support"] = "deprecated"
    response = await webhook.admit("/validate/trainjobs", review(mnist_job()))
    assert response["allowed"] is True
    assert response["warnings"] == [
        'Referenced ClusterTrainingRuntime "torch-distributed" is deprecated and will be removed in a future release'
    ]


# -------------------------------------------------------------------------------- can ever fit


def gpu_job(nodes: int, gpus: int, **kwargs: Any) -> dict[str, Any]:
    job = mnist_job(labels={QUEUE: "default"}, suspend=True, **kwargs)
    job["spec"]["trainer"] = {
        "numNodes": nodes,
        "resourcesPerNode": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": str(gpus)}},
    }
    return job


async def test_job_within_borrowable_quota_is_allowed(webhook: Webhook) -> None:
    # team-a-cq: 8 GPUs nominal + 8 borrowable from the cohort = 16
    response = await webhook.admit("/validate/trainjobs", review(gpu_job(4, 4)))
    assert response["allowed"] is True, response


async def test_job_beyond_quota_plus_borrowing_is_denied_with_numbers(webhook: Webhook) -> None:
    response = await webhook.admit("/validate/trainjobs", review(gpu_job(5, 4)))
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert message.startswith('TrainJob "team-a/mnist" can never be admitted:')
    assert "nvidia.com/gpu" in message
    assert "20" in message  # the job's total GPUs


async def test_required_topology_larger_than_any_domain_is_denied(webhook: Webhook) -> None:
    # torch-rack requires one rack per gang; a rack has 2 nodes x 4 GPUs
    fits = mnist_job(runtime="torch-rack", runtime_kind="TrainingRuntime", labels={QUEUE: "default"}, suspend=True)
    fits["spec"]["trainer"] = {"numNodes": 2}
    response = await webhook.admit("/validate/trainjobs", review(fits))
    assert response["allowed"] is True, response
    too_big = copy.deepcopy(fits)
    too_big["spec"]["trainer"] = {"numNodes": 3}
    response = await webhook.admit("/validate/trainjobs", review(too_big))
    assert response["allowed"] is False
    assert "can never be admitted" in response["status"]["message"]
    assert "rack" in response["status"]["message"]


TAS_DENIALS = [
    pytest.param(
        {
            "kueue.x-k8s.io/podset-required-topology": "cloud.example.com/rack",
            "kueue.x-k8s.io/podset-preferred-topology": "cloud.example.com/block",
        },
        "must not set more than one of",
        id="required-and-preferred",
    ),
    pytest.param(
        {"kueue.x-k8s.io/podset-slice-size": "2"},
        "may only be set together with kueue.x-k8s.io/podset-slice-required-topology",
        id="slice-size-without-slice-topology",
    ),
    pytest.param(
        {
            "kueue.x-k8s.io/podset-slice-required-topology": "cloud.example.com/rack",
            "kueue.x-k8s.io/podset-slice-size": "0",
        },
        "must be an integer of at least 1, got '0'",
        id="slice-size-zero",
    ),
    pytest.param(
        {
            "kueue.x-k8s.io/podset-slice-required-topology": "cloud.example.com/rack",
            "kueue.x-k8s.io/podset-slice-size": "x",
        },
        "must be an integer of at least 1, got 'x'",
        id="slice-size-not-numeric",
    ),
    pytest.param(
        {"kueue.x-k8s.io/podset-unconstrained-topology": "yes"},
        'must be "true" or "false"',
        id="unconstrained-not-boolean",
    ),
    pytest.param(
        {"kueue.x-k8s.io/podset-group-name": "g"},
        "requires kueue.x-k8s.io/podset-required-topology or kueue.x-k8s.io/podset-preferred-topology",
        id="group-without-topology",
    ),
    pytest.param(
        {"kueue.x-k8s.io/podset-required-topology": "not a label!"},
        "must be a node label key",
        id="level-not-a-label",
    ),
]


@pytest.mark.parametrize(("annotations", "expected"), TAS_DENIALS)
async def test_invalid_tas_annotations_on_the_rendered_pod_sets_are_denied(
    webhook: Webhook, cache: Any, annotations: dict[str, str], expected: str
) -> None:
    runtime = cache.get("TrainingRuntime", "torch-rack", "team-a")
    job_template = runtime.spec.template.spec.replicated_jobs[0].template
    job_template.spec.template.metadata.annotations = dict(annotations)
    cache.version += 1
    job = mnist_job(runtime="torch-rack", runtime_kind="TrainingRuntime", labels={QUEUE: "default"}, suspend=True)
    job["spec"]["trainer"] = {"numNodes": 2}
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is False
    assert expected in response["status"]["message"], response["status"]["message"]
    assert "podSets[node].template.metadata.annotations" in response["status"]["message"]


async def test_valid_slice_annotations_are_allowed(webhook: Webhook, cache: Any) -> None:
    runtime = cache.get("TrainingRuntime", "torch-rack", "team-a")
    job_template = runtime.spec.template.spec.replicated_jobs[0].template
    job_template.spec.template.metadata.annotations = {
        "kueue.x-k8s.io/podset-required-topology": "cloud.example.com/block",
        "kueue.x-k8s.io/podset-slice-required-topology": "cloud.example.com/rack",
        "kueue.x-k8s.io/podset-slice-size": "2",
    }
    cache.version += 1
    job = mnist_job(runtime="torch-rack", runtime_kind="TrainingRuntime", labels={QUEUE: "default"}, suspend=True)
    job["spec"]["trainer"] = {"numNodes": 4}
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is True, response


async def test_a_remembered_fit_verdict_is_dropped_when_the_queues_change(webhook: Webhook, cache: Any) -> None:
    # The same job shape is allowed, then denied once team-a-cq's GPU quota shrinks: the
    # remembered verdict lives only as long as the cached objects it was computed from.
    first = await webhook.admit("/validate/trainjobs", review(gpu_job(3, 4)))
    assert first["allowed"] is True, first
    smaller = cache.get("ClusterQueue", "team-a-cq").to_dict()
    gpu = smaller["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]
    gpu["nominalQuota"], gpu["borrowingLimit"] = "4", "0"
    cache.apply(smaller)
    second = await webhook.admit("/validate/trainjobs", review(gpu_job(3, 4)))
    assert second["allowed"] is False
    assert "can never be admitted" in second["status"]["message"]


async def test_jobs_of_one_shape_share_a_verdict_but_each_name_is_checked(webhook: Webhook, cache: Any) -> None:
    # Verdicts are remembered per job shape (namespace, spec, labels, runtime), never per name:
    # another job of the same shape gets the same answer, and its own name is still judged.
    for name in ("sweep-1", "sweep-2"):
        response = await webhook.admit("/validate/trainjobs", review(gpu_job(5, 4, name=name)))
        assert response["allowed"] is False
        assert response["status"]["message"].startswith(f'TrainJob "team-a/{name}" can never be admitted:')
    remembered = cache.derived("fit-verdicts", dict)
    assert len(remembered) == 1  # one shape, judged once

    bad_name = await webhook.admit("/validate/trainjobs", review(gpu_job(2, 4, name="Sweep_3")))
    assert bad_name["allowed"] is False
    assert "metadata.name" in bad_name["status"]["message"]
    assert len(remembered) == 1  # a job with a bad name is judged whole, and not remembered

    other_shape = gpu_job(2, 4, name="sweep-4")
    assert (await webhook.admit("/validate/trainjobs", review(other_shape)))["allowed"] is True
    assert len(remembered) == 2
