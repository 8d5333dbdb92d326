"""The job kinds trainyard derives Workloads from, one registry, and the pass over a set of jobs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

from scheduler.api.kueue import QUEUE_NAME_LABEL, Workload
from scheduler.jobs import batch_job, jobset, kubeflow, pods
from scheduler.jobs.common import JobDocument, JobError, JobIntegration

INTEGRATIONS: tuple[JobIntegration, ...] = (
    JobIntegration("batch/job", "batch", ("Job",), ("v1",), batch_job.derive),
    JobIntegration("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", ("JobSet",), ("v1alpha2",), jobset.derive),
    JobIntegration("pod", "", ("Pod",), ("v1",), pods.derive_single),
    JobIntegration(
        "kubeflow.org/v1",
        "kubeflow.org",
        ("PyTorchJob", "TFJob", "PaddleJob", "XGBoostJob", "JAXJob"),
        ("v1",),
        kubeflow.derive,
    ),
    JobIntegration("kubeflow.org/mpijob", "kubeflow.org", ("MPIJob",), ("v2beta1",), kubeflow.derive),
)


def integration_for(api_version: str, kind: str) -> JobIntegration | None:
    """The integration for (apiVersion, kind): the API group decides first, then the kind, then the version."""
    group, _, version = api_version.rpartition("/")
    for integration in INTEGRATIONS:
        if integration.group == group and kind in integration.kinds and version in integration.versions:
            return integration
    return None


@dataclass
class DerivedWorkloads:
    workloads: list[Workload] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # "namespace/workload" -> "Kind namespace/name"
    notes: list[str] = field(default_factory=list)
    problems: list[tuple[JobDocument, JobError]] = field(default_factory=list)


def derive_workloads(documents: Iterable[JobDocument], *, default_queues: Sequence[str] = ()) -> DerivedWorkloads:
    """Every job's Workload. ``default_queues``: namespaces that have a LocalQueue named
    ``default``; a job there without a queue-name label gets it, as Kueue's LocalQueue defaulting
    does. Any other job without the label is left alone (Kueue's manageJobsWithoutQueueName is
    off by default) with a note."""
    result = DerivedWorkloads()
    pod_documents: list[JobDocument] = []
    for job in documents:
        if not job.queue_name and job.namespace in default_queues:
            labels = job.data.setdefault("metadata", {}).setdefault("labels", {})
            labels[QUEUE_NAME_LABEL] = "default"
        if not job.queue_name:
            result.notes.append(
                f"{job.kind} {job.namespace}/{job.name}: no {QUEUE_NAME_LABEL} label and no LocalQueue 'default' "
                "in its namespace: Kueue leaves it alone (manageJobsWithoutQueueName is off by default)"
            )
            continue
        if job.kind == "Pod":
            pod_documents.append(job)
            continue
        integration = integration_for(str(job.data.get("apiVersion") or ""), job.kind)
        if integration is None:
            continue
        _derive(result, job, partial(integration.derive, job))
    grouped = pods.sort_pods(pod_documents)
    for pod in grouped.singles:
        _derive(result, pod, partial(pods.derive_single, pod))
    for key, members in grouped.groups.items():
        group_name = key.partition("/")[2]
        try:
            total = pods.group_total(members)
        except JobError as error:
            result.problems.append((members[0], error))
            continue
        if len(members) > total:
            result.notes.append(
                f"pod group {key}: {len(members)} pods given for a total count of {total}; Kueue deletes the "
                f"excess pods (the last ones), so the first {total} make the Workload"
            )
            members = members[:total]
        if len(members) < total:
            result.notes.append(
                f"pod group {key}: {len(members)} of its {total} pods given; Kueue creates the group's "
                "Workload only when all of them exist"
            )
            continue
        _derive(result, members[0], partial(pods.derive_group, group_name, members))
    return result


def _derive(result: DerivedWorkloads, job: JobDocument, make: Callable[[], Workload]) -> None:
    try:
        workload = make()
    except JobError as error:
        result.problems.append((job, error))
        return
    result.workloads.append(workload)
    result.sources[f"{workload.namespace}/{workload.name}"] = f"{job.kind} {job.namespace}/{job.name}"
