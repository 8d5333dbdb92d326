"""Builders for JobSets in tests (jobset.x-k8s.io/v1alpha2), as plain dicts: what Trainer renders
for a TrainJob, and what a test seeds in its place."""

from __future__ import annotations

from typing import Any

JOBSET_API = "jobset.x-k8s.io/v1alpha2"


def replicated_job(
    name: str,
    *,
    replicas: int = 1,
    parallelism: int = 1,
    cpu: str = "1",
    annotations: dict[str, str] | None = None,
    backoff_limit: int = 0,
    **pod_spec: Any,
) -> dict[str, Any]:
    """One replicated Job of ``replicas`` indexed Jobs, ``parallelism`` pods each asking ``cpu``;
    ``pod_spec`` fields (``nodeSelector=...``) go into the pod template's spec."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "node", "image": "trainer", "resources": {"requests": {"cpu": cpu}}}],
    }
    spec.update(pod_spec)
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "parallelism": parallelism,
                "completions": parallelism,
                "backoffLimit": backoff_limit,
                "completionMode": "Indexed",
                "template": {"metadata": {"annotations": annotations or {}}, "spec": spec},
            }
        },
    }


def jobset(
    name: str,
    namespace: str = "default",
    *replicated: dict[str, Any],
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A JobSet of the ``replicated`` jobs (none unless given); raw ``spec`` fields last."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = dict(labels)
    body: dict[str, Any] = {"replicatedJobs": list(replicated)}
    body.update(spec)
    return {"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": metadata, "spec": body}
