"""/validate/trainjobs on UPDATE: Trainer's immutable fields and its suspended-only changes, over HTTPS.

Each rule is shown denying and allowing. The old and new objects are what the API server sends:
``oldObject`` as stored, ``object`` as the user (or Kueue) wrote it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from webhook_support import QUEUE, Webhook, mnist_job, review, running, with_node_selector

from webhooks.objects import ObjectCache

KUEUE_MANAGER = "kueue.x-k8s.io/manager"
INITIALIZER_RUNTIME = "torch-distributed-with-initializers"
RUNTIMES = Path(__file__).resolve().parents[2] / "manifests" / "runtimes"


@pytest.fixture(autouse=True)
def initializer_runtime(cache: ObjectCache) -> None:
    """The upstream torch runtime with dataset and model initializers, next to the fixture objects."""
    load_directory_file(RUNTIMES / "torch_distributed_with_initializers.yaml", cache)


def queued(**spec: Any) -> dict[str, Any]:
    return mnist_job(labels={QUEUE: "default"}, suspend=True, **spec)


def load_directory_file(path: Path, cache: ObjectCache) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        if document:
            cache.apply(document)


def initializing(dataset: str) -> dict[str, Any]:
    """A job on the upstream runtime with initializers (loaded by the ``initializer_runtime`` fixture)."""
    job = queued(initializer={"dataset": {"storageUri": dataset}})
    job["spec"]["runtimeRef"]["name"] = INITIALIZER_RUNTIME
    return job


def with_kueue_node_selector(
    job: dict[str, Any], selector: dict[str, str], *, time: str | None = None
) -> dict[str, Any]:
    """Kueue's runtime patch: a node selector on the ``node`` replicated job."""
    return with_node_selector(job, selector, manager=KUEUE_MANAGER, time=time)


def with_service_account(job: dict[str, Any], account: str) -> dict[str, Any]:
    job = copy.deepcopy(job)
    pod_spec = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    pod_spec["template"]["spec"]["template"]["spec"]["serviceAccountName"] = account
    return job


def with_override(job: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    """Trainer v2.1's podTemplateOverrides, as Kueue wrote them against v2.1."""
    job = copy.deepcopy(job)
    job["spec"]["podTemplateOverrides"] = [{"targetJobs": [{"name": "node"}], "spec": {"nodeSelector": selector}}]
    return job


def with_active_jobs(job: dict[str, Any], active: int) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["status"] = {
        "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": active, "suspended": 0}]
    }
    return job


def changed(job: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    job = copy.deepcopy(job)
    *parents, last = path.split(".")
    node = job
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return job


async def verdict(webhook: Webhook, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return await webhook.admit("/validate/trainjobs", review(new, operation="UPDATE", old=old))


DENIED = [
    pytest.param(
        queued(),
        changed(queued(), "spec.runtimeRef", {"name": "torch-rack", "kind": "TrainingRuntime"}),
        "spec.runtimeRef: field is immutable: was ClusterTrainingRuntime 'torch-distributed', got "
        "TrainingRuntime 'torch-rack'",
        id="runtime-ref-changed",
    ),
    pytest.param(
        queued(),
        changed(queued(), "spec.trainer.numNodes", 3),
        "spec.trainer: field is immutable",
        id="trainer-changed",
    ),
    pytest.param(
        initializing("hf://org/data"),
        initializing("hf://org/other"),
        "spec.initializer: field is immutable",
        id="initializer-changed",
    ),
    pytest.param(
        queued(activeDeadlineSeconds=600),
        queued(activeDeadlineSeconds=1200),
        "spec.activeDeadlineSeconds: field is immutable: was 600, got 1200",
        id="active-deadline-changed",
    ),
    pytest.param(
        queued(),
        queued(managedBy="kueue.x-k8s.io/multikueue"),
        "spec.managedBy: field is immutable: was 'trainer.kubeflow.org/trainjob-controller', "
        "got 'kueue.x-k8s.io/multikueue'",
        id="managed-by-changed",
    ),
    pytest.param(
        running(with_kueue_node_selector(queued(), {"pool": "a"})),
        running(with_kueue_node_selector(queued(), {"pool": "b"})),
        "spec.runtimePatches: RuntimePatches can only be modified when the TrainJob is suspended before or "
        "after the update",
        id="runtime-patches-changed-while-running",
    ),
    pytest.param(
        with_active_jobs(running(with_kueue_node_selector(queued(), {"pool": "a"})), active=2),
        queued(),
        "spec.runtimePatches: RuntimePatches cannot be modified when the JobSet's ReplicatedJob 'node' is still active",
        id="runtime-patches-cleared-while-pods-still-run",
    ),
    pytest.param(
        running(with_override(queued(), {"pool": "a"})),
        running(with_override(queued(), {"pool": "b"})),
        "spec.podTemplateOverrides: PodTemplateOverrides can only be modified when the TrainJob is suspended",
        id="pod-template-overrides-changed-while-running",
    ),
    pytest.param(
        with_service_account(with_kueue_node_selector(queued(), {"pool": "a"}), "trainer"),
        with_service_account(with_kueue_node_selector(queued(), {"pool": "a"}), "admin"),
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec."
        "serviceAccountName: field is immutable once manager 'kueue.x-k8s.io/manager' set it for replicated job "
        "'node'",
        id="patched-service-account-changed-even-while-suspended",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), DENIED)
async def test_trainer_update_rules_deny(
    webhook: Webhook, old: dict[str, Any], new: dict[str, Any], expected: str
) -> None:
    response = await verdict(webhook, old, new)
    assert response["allowed"] is False
    assert response["status"]["reason"] == "Invalid"
    message = response["status"]["message"]
    assert message.startswith('TrainJob "team-a/mnist" is invalid: ')
    assert expected in message, message
    assert message.count("; ") == 0, f"only the rule under test may fail: {message}"


ALLOWED = [
    pytest.param(
        queued(),
        changed(
            queued(),
            "spec.runtimeRef",
            {"name": "torch-distributed", "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
        ),
        id="runtime-ref-defaults-spelled-out",
    ),
    pytest.param(
        changed(queued(), "spec.trainer", None),
        queued(),
        id="trainer-set-where-there-was-none",  # CEL transition rules need the field on both sides
    ),
    pytest.param(
        initializing("hf://org/data"),
        running(initializing("hf://org/data")),
        id="initializer-unchanged",
    ),
    pytest.param(
        queued(activeDeadlineSeconds=600),
        running(queued(activeDeadlineSeconds=600)),
        id="active-deadline-unchanged",
    ),
    pytest.param(
        queued(),
        queued(managedBy="trainer.kubeflow.org/trainjob-controller"),
        id="managed-by-default-spelled-out",
    ),
    pytest.param(
        with_kueue_node_selector(queued(), {"pool": "a"}),
        with_kueue_node_selector(queued(), {"pool": "b"}),
        id="runtime-patches-changed-while-suspended",
    ),
    pytest.param(
        queued(),
        running(with_kueue_node_selector(queued(), {"pool": "a"})),
        id="runtime-patches-injected-as-kueue-resumes",
    ),
    pytest.param(
        running(with_kueue_node_selector(queued(), {"pool": "a"})),
        with_kueue_node_selector(queued(), {"pool": "a"}),
        id="suspended-by-kueue-with-patches-kept",
    ),
    pytest.param(
        with_active_jobs(with_kueue_node_selector(queued(), {"pool": "a"}), active=0),
        queued(),
        id="runtime-patches-cleared-once-pods-stopped",
    ),
    pytest.param(
        running(with_kueue_node_selector(queued(), {"pool": "a"}, time="2026-01-01T00:00:00Z")),
        running(with_kueue_node_selector(queued(), {"pool": "a"}, time="2026-02-01T00:00:00Z")),
        id="runtime-patch-time-only-while-running",
    ),
    pytest.param(
        with_override(queued(), {"pool": "a"}),
        running(with_override(queued(), {"pool": "b"})),
        id="pod-template-overrides-changed-as-kueue-resumes",
    ),
    pytest.param(
        with_kueue_node_selector(queued(), {"pool": "a"}),
        with_service_account(with_kueue_node_selector(queued(), {"pool": "b"}), "trainer"),
        id="patched-service-account-set-for-the-first-time-while-suspended",
    ),
]


@pytest.mark.parametrize(("old", "new"), ALLOWED)
async def test_trainer_update_rules_allow(webhook: Webhook, old: dict[str, Any], new: dict[str, Any]) -> None:
    response = await verdict(webhook, old, new)
    assert response["allowed"] is True, response


async def test_every_broken_update_rule_is_named_in_one_message(webhook: Webhook) -> None:
    old = running(queued(activeDeadlineSeconds=600))
    new = changed(changed(old, "spec.activeDeadlineSeconds", 60), "spec.runtimeRef.name", "other")
    message = (await verdict(webhook, old, new))["status"]["message"]
    assert "spec.runtimeRef: field is immutable" in message
    assert "spec.activeDeadlineSeconds: field is immutable" in message


async def test_queue_name_stays_immutable_while_admitted(webhook: Webhook) -> None:
    # Kueue's rule, alongside Trainer's: an admitted (unsuspended) job keeps its queue.
    old = running(queued())
    new = changed(old, "metadata.labels", {QUEUE: "training"})
    response = await verdict(webhook, old, new)
    assert response["allowed"] is False
    assert (
        "kueue.x-k8s.io/queue-name]: field is immutable while the job is not suspended"
        in (response["status"]["message"])
    )
