"""`trainyard admit`'s jobs: the Workloads of the Jobs, JobSets, Pods and Kubeflow jobs it was given.

Derived by ``scheduler.jobs`` as Kueue's job integrations derive them; a job Kueue would refuse
to build a Workload for is refused with its file, line and field, the rest are noted.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from scheduler.api.kueue import Workload
    from scheduler.api.loading import KueueObjects


def job_workloads(loaded: KueueObjects) -> tuple[list[Workload], dict[str, str]]:
    """Each job's Workload and, by ``namespace/workload``, the job it came from (``Kind ns/name``)."""
    from scheduler.api.checks import describe_errors, parse_field_path, subject_of
    from scheduler.api.kueue import DEFAULT_LOCAL_QUEUE_NAME, LocalQueue
    from scheduler.jobs import JobDocument, derive_workloads

    if not loaded.jobs:
        return [], {}
    documents = {id(d.data): d for d in loaded.jobs}
    jobs = [JobDocument(document.data, ordinal) for ordinal, document in enumerate(loaded.jobs)]
    defaults = [
        obj.namespace or "default"
        for obj in loaded.objects
        if isinstance(obj, LocalQueue) and obj.name == DEFAULT_LOCAL_QUEUE_NAME
    ]
    derived = derive_workloads(jobs, default_queues=defaults)
    for note in derived.notes:
        print(f"note: {note}", file=sys.stderr)
    problems = []
    for job, error in derived.problems:
        document = documents[id(job.data)]
        first = error.errors[0].path if error.errors else ""
        line = document.line_of(parse_field_path(first)) if first else document.line
        subject = subject_of(job.kind, job.name, job.namespace)
        problems.append(f"{document.path}:{line}: {describe_errors(subject, error.errors)}")
    if problems:
        raise UserError("\n".join(problems))
    return derived.workloads, derived.sources
