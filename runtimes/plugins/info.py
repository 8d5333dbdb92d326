"""Build the :class:`RuntimeInfo` one render starts from (Trainer's ``newRuntimeInfo``).

The runtime's JobSet template is copied, the TrainJob's ``podSpecOverrides`` (v2.0),
``podTemplateOverrides`` (v2.1) and ``runtimePatches`` (HEAD) are merged over it in list order,
every replicated job becomes a pod set, and ``trainer.resourcesPerNode`` is merged into the
``node`` container of the node pods.
"""

from __future__ import annotations

from typing import Any

from runtimes.api.trainer import (
    ANCESTOR_LABEL,
    ANCESTOR_TRAINER,
    LAUNCHER,
    NODE,
    AnyTrainingRuntime,
    MLPolicy,
    TrainJob,
)
from runtimes.plugins.framework import PodSetInfo, RuntimeInfo
from runtimes.plugins.patches import StrategicMerge, pod_template_override_as_patch
from runtimes.plugins.podspec import find_container, merge_resources


def ancestor_of(job: dict[str, Any]) -> str | None:
    """The job's ``trainer.kubeflow.org/trainjob-ancestor-step``, read from its Job template labels.

    As in Trainer, the label alone says which step a replicated job is: a job named ``node`` or
    ``dataset-initializer`` without the label is an ordinary job (no numNodes, no PET_* env, no
    initializer settings), and a labelled job may have any name.
    """
    labels = ((job.get("template") or {}).get("metadata") or {}).get("labels") or {}
    value = labels.get(ANCESTOR_LABEL)
    return str(value) if value is not None else None


def merged_template(trainjob: TrainJob, runtime: AnyTrainingRuntime) -> dict[str, Any]:
    """The runtime's JobSet template (``{metadata, spec}``) with the TrainJob's patches applied."""
    # to_dict builds new containers, so the runtime object is never touched by the merge.
    template: dict[str, Any] = runtime.spec.template.to_dict()
    template.setdefault("metadata", {})
    template.setdefault("spec", {})
    existing = {job.get("name") for job in template["spec"].get("replicatedJobs") or []}
    # One working copy for every patch: the merge is linear in the patches, however many there are.
    merge = StrategicMerge(template)
    for spec_override in trainjob.spec.pod_spec_overrides or []:
        # v2.0's podSpecOverrides: the same merge as v2.1's podTemplateOverrides, on the pod spec only.
        targets = [target.name for target in spec_override.target_jobs if target.name in existing]
        merge.apply(pod_template_override_as_patch({"spec": spec_override.pod_spec()}, targets))
    for override in trainjob.spec.pod_template_overrides or []:
        # Overrides naming a job the runtime lacks are a validation error; never invent a job.
        targets = [target.name for target in override.target_jobs if target.name in existing]
        merge.apply(pod_template_override_as_patch(override.to_dict(), targets))
    for runtime_patch in trainjob.spec.runtime_patches or []:
        spec_patch = runtime_patch.training_runtime_spec
        if spec_patch is None or spec_patch.template is None:
            continue
        patch = spec_patch.template.to_dict()
        jobs = (patch.get("spec") or {}).get("replicatedJobs")
        if jobs:
            patch["spec"]["replicatedJobs"] = [job for job in jobs if job.get("name") in existing]
        merge.apply(patch)
    merged: dict[str, Any] = merge.document
    return merged


def build_runtime_info(trainjob: TrainJob, runtime: AnyTrainingRuntime) -> RuntimeInfo:
    template = merged_template(trainjob, runtime)
    metadata = template.get("metadata") or {}
    jobset_spec: dict[str, Any] = template.get("spec") or {}
    # Shared with the runtime, not copied: plugins read the policy, the counts they resolve go
    # into the pod sets and ``info.resolved``.
    ml_policy = runtime.spec.ml_policy if runtime.spec.ml_policy is not None else MLPolicy()
    labels = {**(metadata.get("labels") or {}), **(trainjob.spec.labels or {})}
    annotations = {**(metadata.get("annotations") or {}), **(trainjob.spec.annotations or {})}

    jobs: list[dict[str, Any]] = jobset_spec.get("replicatedJobs") or []
    pod_sets: list[PodSetInfo] = []
    for job in jobs:
        name = str(job.get("name", ""))
        ancestor = ancestor_of(job)
        job_spec = (job.get("template") or {}).get("spec") or {}
        parallelism = job_spec.get("parallelism")
        count = 1 if parallelism is None else int(parallelism)
        if ancestor == ANCESTOR_TRAINER and name != LAUNCHER:
            count = 1 if ml_policy.num_nodes is None else ml_policy.num_nodes
        replicas = job.get("replicas")
        pod_sets.append(
            PodSetInfo(name=name, ancestor=ancestor, count=count, replicas=1 if replicas is None else replicas)
        )

    info = RuntimeInfo(
        trainjob_name=trainjob.metadata.name,
        namespace=trainjob.metadata.namespace,
        ml_policy=ml_policy,
        pod_group_policy=runtime.spec.pod_group_policy,
        jobset_labels=labels,
        jobset_annotations=annotations,
        jobset_spec=jobset_spec,
        pod_sets=pod_sets,
        runtime_name=runtime.metadata.name,
        runtime=runtime,
    )
    trainer = trainjob.spec.trainer
    if trainer is not None and trainer.resources_per_node is not None:
        for pod_set in info.node_pod_sets():
            pod_spec = info.pod_spec(pod_set.name)
            container = find_container(pod_spec, NODE) if pod_spec is not None else None
            if container is not None:
                merge_resources(container, trainer.resources_per_node)
    return info
