"""Builders for Kubeflow Trainer objects in tests: TrainJobs and (Cluster)TrainingRuntimes, as plain dicts.

Keyword arguments name what a test varies; everything else is a valid default a user would write::

    trainjob("llm", "team-a", nodes=4, requests={"cpu": "8", "nvidia.com/gpu": "8"}, queue="main")
    cluster_training_runtime("torch-distributed", ml_policy={"numNodes": 1, "torch": {}})

``trainer`` fields go into ``spec.trainer`` (``numNodes=0`` builds a job the rules refuse), further
keywords are raw ``spec`` fields (``suspend=True``, ``managedBy=...``), as in the YAML.
"""

from __future__ import annotations

from typing import Any

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
GPU = "nvidia.com/gpu"
# KWOK's pod-complete stage completes a pod this long after it starts (trainyard's stages read both)
KWOK_DELAY_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"
KWOK_JITTER_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/jitter-delay"


def trainjob(
    name: str = "job",
    namespace: str = "default",
    *,
    runtime: str = "torch-distributed",
    runtime_kind: str | None = None,
    nodes: int | str | None = 1,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    trainer: dict[str, Any] | None = None,
    queue: str | None = None,
    priority_class: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    pod_annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A TrainJob on ``runtime``: ``nodes`` nodes asking ``requests`` each (``nodes=None`` leaves
    ``spec.trainer`` to ``trainer`` alone, or out when that is empty too).

    ``queue`` and ``priority_class`` are Kueue's labels; ``pod_annotations`` reach the ``node``
    job's pods through ``podTemplateOverrides`` (how the KWOK stages read a pod's run time).
    """
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    all_labels = dict(labels or {})
    if queue is not None:
        all_labels[QUEUE_LABEL] = queue
    if priority_class is not None:
        all_labels[PRIORITY_CLASS_LABEL] = priority_class
    if labels is not None or all_labels:
        metadata["labels"] = all_labels
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    runtime_ref: dict[str, Any] = {"name": runtime}
    if runtime_kind is not None:
        runtime_ref["kind"] = runtime_kind
    body: dict[str, Any] = {"runtimeRef": runtime_ref}
    trainer_fields = _trainer(nodes, requests, limits, trainer or {})
    if trainer_fields:
        body["trainer"] = trainer_fields
    if pod_annotations is not None:
        body["podTemplateOverrides"] = [
            {"targetJobs": [{"name": "node"}], "metadata": {"annotations": pod_annotations}}
        ]
    body.update(spec)
    return {"apiVersion": TRAINER_API, "kind": "TrainJob", "metadata": metadata, "spec": body}


def kwok_trainjob(
    name: str,
    namespace: str = "team-a",
    *,
    nodes: int = 2,
    gpus: int = 8,
    run: str = "1s",
    queue: str | None = "default",
    **fields: Any,
) -> dict[str, Any]:
    """A TrainJob for a cluster of KWOK nodes (the sandbox's): ``nodes`` nodes of 8 CPUs and ``gpus``
    GPUs each, its pods completed by KWOK after ``run``; in ``queue`` unless that is None."""
    return trainjob(
        name,
        namespace,
        nodes=nodes,
        requests={"cpu": "8", GPU: str(gpus)},
        limits={GPU: str(gpus)},
        queue=queue,
        pod_annotations={KWOK_DELAY_ANNOTATION: run, KWOK_JITTER_ANNOTATION: run},
        **fields,
    )


def _trainer(
    nodes: int | str | None, requests: dict[str, str] | None, limits: dict[str, str] | None, fields: dict[str, Any]
) -> dict[str, Any]:
    trainer: dict[str, Any] = {} if nodes is None else {"numNodes": nodes}
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    if resources:
        trainer["resourcesPerNode"] = resources
    trainer.update(fields)
    return trainer


def _runtime(
    kind: str,
    metadata: dict[str, Any],
    ml_policy: dict[str, Any] | None,
    replicated_jobs: list[dict[str, Any]] | None,
    spec: dict[str, Any],
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "mlPolicy": {"numNodes": 1, "torch": {}} if ml_policy is None else ml_policy,
        "template": {"spec": {"replicatedJobs": list(replicated_jobs or [])}},
    }
    body.update(spec)
    return {"apiVersion": TRAINER_API, "kind": kind, "metadata": metadata, "spec": body}


def cluster_training_runtime(
    name: str = "torch-distributed",
    *,
    ml_policy: dict[str, Any] | None = None,
    replicated_jobs: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A ClusterTrainingRuntime: ``ml_policy`` (one torch node unless given), the JobSet template's
    ``replicated_jobs`` (see ``tests.builders.jobset.replicated_job``), raw ``spec`` fields last."""
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    return _runtime("ClusterTrainingRuntime", metadata, ml_policy, replicated_jobs, spec)


def training_runtime(
    name: str,
    namespace: str = "default",
    *,
    ml_policy: dict[str, Any] | None = None,
    replicated_jobs: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A namespaced TrainingRuntime, otherwise as ``cluster_training_runtime``."""
    metadata = {"name": name, "namespace": namespace}
    return _runtime("TrainingRuntime", metadata, ml_policy, replicated_jobs, spec)
