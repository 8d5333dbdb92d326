"""Kueue Workload pod sets of a rendered TrainJob, derived as Kueue derives them from a JobSet.

Kueue's JobSet integration (``pkg/controller/jobs/jobset``) makes one pod set per replicated
job: name = the replicated job's name (lower-cased), template = its pod template, count =
replicas × pods per Job (min(parallelism, completions)), and a topology request from the
template's TAS annotations. They are plain dicts because ``runtimes`` may not import the
scheduler's Kueue models; ``scheduler.api.kueue.PodSet.model_validate`` reads them as they are.
"""

from __future__ import annotations

from typing import Any

from runtimes.api.jobset import JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_LABEL
from runtimes.api.kueue_labels import (
    PODSET_GROUP_NAME,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY,
)
from runtimes.render import RenderedTrainJob


def workload_pod_sets(rendered: RenderedTrainJob) -> list[dict[str, Any]]:
    pod_sets: list[dict[str, Any]] = []
    for job in rendered.jobset.spec.replicated_jobs:
        template = job.template.spec.template.to_dict()  # a fresh dict: to_dict shares nothing
        pod_set: dict[str, Any] = {
            "name": job.name.lower(),
            "template": template,
            "count": job.effective_replicas * job.pods_per_job,
        }
        # How Kueue tells pods of a JobSet apart: the completion index within a Job, the Job index
        # within the replicated job.
        request = topology_request(template, JOB_COMPLETION_INDEX_ANNOTATION, (JOB_INDEX_LABEL, job.effective_replicas))
        if request:
            pod_set["topologyRequest"] = request
        pod_sets.append(pod_set)
    return pod_sets


def topology_request(
    template: dict[str, Any], pod_index_label: str | None, sub_group: tuple[str, int] | None = None
) -> dict[str, Any] | None:
    """Kueue's ``jobframework.NewPodSetTopologyRequest``: the template's TAS annotations, and how
    the job kind tells its pods apart (``pod_index_label``, and ``sub_group`` = (label, count)).
    None when the template asks for no topology. Every job kind's pod sets use this one reading
    (``scheduler.jobs`` for Kueue's integrations, :func:`workload_pod_sets` for TrainJobs)."""
    annotations: dict[str, str] = (template.get("metadata") or {}).get("annotations") or {}
    request: dict[str, Any] = {}
    if PODSET_REQUIRED_TOPOLOGY in annotations:
        request["required"] = annotations[PODSET_REQUIRED_TOPOLOGY]
    elif PODSET_PREFERRED_TOPOLOGY in annotations:
        request["preferred"] = annotations[PODSET_PREFERRED_TOPOLOGY]
    elif annotations.get(PODSET_UNCONSTRAINED_TOPOLOGY) == "true":
        request["unconstrained"] = True
    elif PODSET_SLICE_REQUIRED_TOPOLOGY not in annotations:
        return None
    if pod_index_label:
        request["podIndexLabel"] = pod_index_label
    if sub_group is not None:
        request["subGroupIndexLabel"], request["subGroupCount"] = sub_group
    if PODSET_SLICE_REQUIRED_TOPOLOGY in annotations:
        request["podSetSliceRequiredTopology"] = annotations[PODSET_SLICE_REQUIRED_TOPOLOGY]
        if annotations.get(PODSET_SLICE_SIZE, "").isdigit():
            request["podSetSliceSize"] = int(annotations[PODSET_SLICE_SIZE])
    if PODSET_GROUP_NAME in annotations:
        request["podSetGroupName"] = annotations[PODSET_GROUP_NAME]
    return request
