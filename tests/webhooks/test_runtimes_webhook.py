"""/validate/runtimes over HTTPS: Trainer's runtime rules (asked of runtimes.validation)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from webhook_support import OBJECTS, Webhook, review


def runtimes() -> dict[str, dict[str, Any]]:
    documents = yaml.safe_load_all((Path(OBJECTS) / "runtimes.yaml").read_text())
    return {doc["metadata"]["name"]: doc for doc in documents}


def torch_distributed() -> dict[str, Any]:
    return copy.deepcopy(runtimes()["torch-distributed"])


def _node_job(runtime: dict[str, Any]) -> dict[str, Any]:
    job: dict[str, Any] = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    return job


async def test_upstream_runtimes_are_allowed(webhook: Webhook) -> None:
    for runtime in runtimes().values():
        response = await webhook.admit("/validate/runtimes", review(runtime))
        assert response["allowed"] is True, response


async def test_trainer_step_with_two_replicas_is_denied(webhook: Webhook) -> None:
    runtime = torch_distributed()
    _node_job(runtime)["replicas"] = 2
    response = await webhook.admit("/validate/runtimes", review(runtime))
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert message.startswith('ClusterTrainingRuntime "torch-distributed" is invalid:')
    assert "spec.template.spec.replicatedJobs[0].replicas" in message
    assert "always must be 1" in message


async def test_two_ml_policies_are_denied(webhook: Webhook) -> None:
    runtime = torch_distributed()
    runtime["spec"]["mlPolicy"]["mpi"] = {"numProcPerNode": 1}
    response = await webhook.admit("/validate/runtimes", review(runtime))
    assert response["allowed"] is False
    assert "only one ML policy may be configured" in response["status"]["message"]


async def test_badly_typed_runtime_names_the_field(webhook: Webhook) -> None:
    runtime = torch_distributed()
    runtime["spec"]["mlPolicy"]["numNodes"] = "many"
    response = await webhook.admit("/validate/runtimes", review(runtime))
    assert response["allowed"] is False
    assert "spec.mlPolicy.numNodes" in response["status"]["message"]


async def test_deprecated_cluster_runtime_is_allowed_with_a_warning(webhook: Webhook) -> None:
    runtime = torch_distributed()
    runtime["metadata"]["labels"]["trainer.kubeflow.org/support"] = "deprecated"
    response = await webhook.admit("/validate/runtimes", review(runtime))
    assert response["allowed"] is True
    assert response["warnings"] == [
        'ClusterTrainingRuntime "torch-distributed" is deprecated and will be removed in a future release'
    ]


async def test_training_runtime_updates_are_not_revalidated_but_cluster_runtime_updates_are(
    webhook: Webhook,
) -> None:
    namespaced = copy.deepcopy(runtimes()["torch-rack"])
    _node_job(namespaced)["replicas"] = 3
    response = await webhook.admit("/validate/runtimes", review(namespaced, operation="UPDATE", old=namespaced))
    assert response["allowed"] is True  # Trainer validates TrainingRuntimes on create only
    cluster = torch_distributed()
    _node_job(cluster)["replicas"] = 3
    response = await webhook.admit("/validate/runtimes", review(cluster, operation="UPDATE", old=cluster))
    assert response["allowed"] is False


@pytest.mark.parametrize("kind", ["TrainJob", "JobSet"])
async def test_other_kinds_are_denied(webhook: Webhook, kind: str) -> None:
    runtime = torch_distributed()
    runtime["kind"] = kind
    response = await webhook.admit("/validate/runtimes", review(runtime))
    assert response["allowed"] is False
    assert "expected apiVersion trainer.kubeflow.org/v1alpha1" in response["status"]["message"]
