"""JobSet, as Kueue's ``jobset.x-k8s.io/jobset`` integration makes its Workload.

One pod set per replicated job: name = the replicated job's name, template = its Job's pod
template, count = replicas (default 1) x the pods one Job runs at once. A TAS request tells
pods apart by completion index within a Job and by the Job's index within the replicated job.
The JobSet is first checked by JobSet's own webhook rules (``runtimes.runtime_validation``).
"""

from __future__ import annotations

from typing import Any

from runtimes.api.jobset import JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_LABEL
from runtimes.errors import FieldError
from runtimes.runtime_validation import validate_jobset_spec
from scheduler.api.kueue import Workload
from scheduler.jobs.batch_job import pods_count
from scheduler.jobs.common import (
    JobDocument,
    JobError,
    build_workload,
    pod_set,
    pod_template,
    replica_count,
    topology_request,
)


def derive(job: JobDocument) -> Workload:
    spec = job.spec
    errors = validate_jobset_spec(spec)
    if errors:
        # validate_jobset_spec's paths already start at ``spec`` (prefixing again gave spec.spec.).
        raise JobError(errors)
    pod_sets: list[dict[str, Any]] = []
    replicated_jobs = spec.get("replicatedJobs")
    if not isinstance(replicated_jobs, list) or not replicated_jobs:
        raise JobError([FieldError("spec.replicatedJobs", "must list at least one replicated job")])
    for index, replicated in enumerate(replicated_jobs):
        path = f"spec.replicatedJobs[{index}]"
        if not isinstance(replicated, dict):
            raise JobError([FieldError(path, "must be a replicated job (name, replicas, template)")])
        job_spec = (replicated.get("template") or {}).get("spec") or {}
        template = pod_template(job_spec.get("template"), f"{path}.template.spec.template")
        replicas = replica_count(replicated.get("replicas"), f"{path}.replicas")
        count = replicas * pods_count(job_spec, f"{path}.template.spec")
        request = topology_request(template, JOB_COMPLETION_INDEX_ANNOTATION, (JOB_INDEX_LABEL, replicas))
        pod_sets.append(pod_set(str(replicated.get("name") or "").lower(), template, count, request))
    return build_workload(job, pod_sets)
