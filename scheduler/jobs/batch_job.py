"""batch/v1 Job, as Kueue's ``batch/job`` integration makes its Workload (pkg/controller/jobs/job).

One pod set ``main``: the Job's pod template, count = the pods it runs at once,
``min(parallelism, completions)`` (parallelism defaults to 1). Partial admission: the annotation
``kueue.x-k8s.io/job-min-parallelism`` gives the pod set a ``minCount`` (from 1 to parallelism - 1).
A TAS request tells pods apart by their completion index.
"""

from __future__ import annotations

from runtimes.errors import FieldError
from scheduler.api.kueue import Workload
from scheduler.jobs.common import JobDocument, JobError, build_workload, pod_set, pod_template, replica_count
from scheduler.jobs.common import topology_request as topology_request

MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


def pods_count(spec: dict[str, object], path: str = "spec") -> int:
    """Kueue's ``podsCount``: parallelism (default 1), capped by completions when set."""
    parallelism = replica_count(spec.get("parallelism"), f"{path}.parallelism")
    completions = spec.get("completions")
    if completions is not None:
        return min(parallelism, replica_count(completions, f"{path}.completions"))
    return parallelism


def min_count(job: JobDocument, parallelism: int) -> int | None:
    text = job.annotations.get(MIN_PARALLELISM_ANNOTATION)
    if text is None:
        return None
    path = f"metadata.annotations[{MIN_PARALLELISM_ANNOTATION}]"
    if not text.isdigit() or not 0 < int(text) < parallelism:
        raise JobError(
            [FieldError(path, f"must be a whole number from 1 to parallelism - 1 ({parallelism - 1}), got {text!r}")]
        )
    return int(text)


def derive(job: JobDocument) -> Workload:
    spec = job.spec
    template = pod_template(spec.get("template"), "spec.template")
    count = pods_count(spec)
    found = pod_set("main", template, count, topology_request(template, COMPLETION_INDEX_LABEL))
    minimum = min_count(job, replica_count(spec.get("parallelism"), "spec.parallelism"))
    if minimum is not None:
        found["minCount"] = minimum
    return build_workload(job, [found])
