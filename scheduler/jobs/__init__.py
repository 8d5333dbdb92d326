"""Workloads derived from job objects, as Kueue's job integrations derive them.

``derive_workloads(documents)`` takes job documents (plain data as read from YAML) and returns
the Workload of each job Kueue would manage, notes for those it would leave alone (no
queue-name label, an incomplete pod group), and one error line per job it would refuse. The
kinds: batch/v1 Job, jobset.x-k8s.io JobSet, v1 Pod and pod groups, and the Kubeflow Training
Operator's jobs (PyTorchJob, TFJob, PaddleJob, XGBoostJob, JAXJob, MPIJob v2beta1). TrainJobs
have their own path (``scheduler.trainjob.workload_for_trainjob``: they render with a runtime).
"""

from __future__ import annotations

from scheduler.jobs.common import JobDocument, JobError
from scheduler.jobs.registry import INTEGRATIONS, DerivedWorkloads, derive_workloads, integration_for

__all__ = ["INTEGRATIONS", "DerivedWorkloads", "JobDocument", "JobError", "derive_workloads", "integration_for"]
