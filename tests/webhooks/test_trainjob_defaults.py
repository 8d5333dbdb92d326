"""/mutate/trainjobs fills Trainer's and Kueue's defaults, and nothing copied from the runtime.

Also: admission renders an MPI TrainJob's pod sets without generating SSH key material.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import ec
from webhook_support import QUEUE, Webhook, apply_patch, mnist_job, review, with_node_selector

from runtimes.api.trainer import TrainJob
from runtimes.render import render_trainjob
from webhooks.objects import ObjectCache

RUNTIMES = Path(__file__).resolve().parents[2] / "manifests" / "runtimes"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MANAGER = "example.com/platform-team"


def with_patch(job: dict[str, Any], selector: dict[str, str], time: str | None = None) -> dict[str, Any]:
    return with_node_selector(job, selector, manager=MANAGER, time=time)


async def mutated(webhook: Webhook, job: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    response = await webhook.admit("/mutate/trainjobs", review(job, **kwargs))
    assert response["allowed"] is True, response
    return apply_patch(job, response)


async def test_trainer_crd_defaults_are_written_for_an_unqueued_job(webhook: Webhook) -> None:
    job = mnist_job(namespace="team-b")
    patched = await mutated(webhook, job)
    assert patched["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert patched["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    assert patched["spec"]["suspend"] is False  # Trainer's default; no queue, so Kueue does not suspend
    assert QUEUE not in (patched["metadata"].get("labels") or {})


async def test_given_values_are_kept(webhook: Webhook) -> None:
    job = mnist_job(namespace="team-b", runtime_kind="TrainingRuntime", runtime="torch-rack", suspend=True)
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    job["spec"]["runtimeRef"]["apiGroup"] = "trainer.kubeflow.org"
    response = await webhook.admit("/mutate/trainjobs", review(job))
    assert "patch" not in response  # every default already has a value


async def test_nothing_is_copied_from_the_runtime(webhook: Webhook) -> None:
    job = mnist_job()
    del job["spec"]["trainer"]
    patched = await mutated(webhook, job)
    # The runtime has numNodes, an image and resources; Trainer reads them when it renders.
    assert "trainer" not in patched["spec"]
    assert set(patched["spec"]) == {"runtimeRef", "suspend", "managedBy"}


async def test_runtime_patches_get_a_time_on_create(webhook: Webhook) -> None:
    job = with_patch(mnist_job(), {"pool": "a"})
    stamped = with_patch(mnist_job(), {"pool": "b"}, time="2026-01-01T00:00:00Z")
    patched = await mutated(webhook, job)
    assert RFC3339.match(patched["spec"]["runtimePatches"][0]["time"])
    kept = await mutated(webhook, stamped)
    assert kept["spec"]["runtimePatches"][0]["time"] == "2026-01-01T00:00:00Z"


async def test_update_keeps_the_time_of_an_unchanged_patch_and_stamps_a_changed_one(webhook: Webhook) -> None:
    old = with_patch(mnist_job(suspend=True), {"pool": "a"}, time="2026-01-01T00:00:00Z")
    resent = with_patch(mnist_job(suspend=True), {"pool": "a"})  # time dropped by the client
    patched = await mutated(webhook, resent, operation="UPDATE", old=old)
    assert patched["spec"]["runtimePatches"][0]["time"] == "2026-01-01T00:00:00Z"
    edited = with_patch(mnist_job(suspend=True), {"pool": "b"})
    patched = await mutated(webhook, edited, operation="UPDATE", old=old)
    time = patched["spec"]["runtimePatches"][0]["time"]
    assert RFC3339.match(time)
    assert time != "2026-01-01T00:00:00Z"


async def test_update_without_runtime_patches_is_not_mutated(webhook: Webhook) -> None:
    old = mnist_job(labels={QUEUE: "default"}, suspend=True)
    new = mnist_job(labels={QUEUE: "default"}, suspend=False)
    response = await webhook.admit("/mutate/trainjobs", review(new, operation="UPDATE", old=old))
    assert "patch" not in response  # CRD defaults and Kueue's queue default are CREATE-time only


async def test_defaulting_twice_changes_nothing(webhook: Webhook) -> None:
    job = with_patch(mnist_job(), {"pool": "a"})
    once = await mutated(webhook, job)
    response = await webhook.admit("/mutate/trainjobs", review(once))
    assert "patch" not in response


# ------------------------------------------------------------------------- no key material


@pytest.fixture
def mpi_runtime(cache: ObjectCache) -> None:
    for document in yaml.safe_load_all((RUNTIMES / "deepspeed_distributed.yaml").read_text()):
        if document:
            cache.apply(document)


@pytest.fixture
def no_key_generation(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Any SSH key generated while this is active is recorded (and refused)."""
    generated: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        generated.append("ssh key")
        raise AssertionError("admission must not generate key material")

    # The MPI plugin's key factory calls cryptography's EC key generation; patch it where it lives.
    monkeypatch.setattr(ec, "generate_private_key", refuse)
    return generated


@pytest.mark.usefixtures("mpi_runtime")
async def test_admitting_an_mpi_trainjob_generates_no_key_material(
    webhook: Webhook, cache: ObjectCache, no_key_generation: list[str]
) -> None:
    job = mnist_job(runtime="deepspeed-distributed", labels={QUEUE: "default"}, suspend=True)
    job["spec"]["trainer"] = {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "4", "nvidia.com/gpu": "1"}}}
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is True, response
    too_big = copy.deepcopy(job)
    too_big["spec"]["trainer"]["numNodes"] = 40
    response = await webhook.admit("/validate/trainjobs", review(too_big))
    assert response["allowed"] is False
    assert "can never be admitted" in response["status"]["message"]
    assert no_key_generation == []
    # The guard is live: a render for creating the objects does generate the key.
    runtime = cache.runtime("ClusterTrainingRuntime", "deepspeed-distributed", None)
    assert runtime is not None
    with pytest.raises(AssertionError, match="must not generate key material"):
        render_trainjob(TrainJob.model_validate(job), runtime)
    assert no_key_generation == ["ssh key"]


def test_render_without_key_material_emits_everything_but_the_ssh_secret(cache: ObjectCache) -> None:
    for document in yaml.safe_load_all((RUNTIMES / "deepspeed_distributed.yaml").read_text()):
        if document:
            cache.apply(document)
    runtime = cache.runtime("ClusterTrainingRuntime", "deepspeed-distributed", None)
    assert runtime is not None
    job = TrainJob.model_validate(mnist_job(runtime="deepspeed-distributed"))
    full = render_trainjob(job, runtime)
    assert [secret["type"] for secret in full.secrets] == ["kubernetes.io/ssh-auth"]
    lean = render_trainjob(job, runtime, key_material=False)
    assert lean.secrets == []
    assert lean.config_maps == full.config_maps  # the hostfile is still rendered
    assert lean.jobset.to_dict() == full.jobset.to_dict()


async def test_a_queued_job_on_a_broken_runtime_is_denied_naming_the_runtime(
    webhook: Webhook, cache: ObjectCache
) -> None:
    # The runtime went bad after it was admitted (an edit of a TrainingRuntime is not re-validated).
    runtime = cache.runtime("TrainingRuntime", "torch-rack", "team-a")
    assert runtime is not None
    runtime.spec.template.spec.replicated_jobs[0].replicas = 2
    cache.version += 1
    job = mnist_job(runtime="torch-rack", runtime_kind="TrainingRuntime", labels={QUEUE: "default"}, suspend=True)
    job["spec"]["trainer"] = {"numNodes": 2}
    response = await webhook.admit("/validate/trainjobs", review(job))
    assert response["allowed"] is False
    assert response["status"]["reason"] == "Invalid"  # named, not an InternalError from a render that raised
    message = response["status"]["message"]
    assert "spec.runtimeRef: TrainingRuntime 'torch-rack' is invalid (spec.template.spec.replicatedJobs[0]" in message
    assert "fix the runtime or reference another one" in message
