"""Kubernetes API models a TrainJob renders into: Trainer, JobSet, PodGroup and batch/v1 Job shapes."""

from runtimes.api.batch import JobSpec, JobTemplateSpec, PodFailurePolicy, PodFailurePolicyRule
from runtimes.api.jobset import FailurePolicy, JobSet, JobSetSpec, ReplicatedJob, SuccessPolicy
from runtimes.api.podgroup import POD_GROUP_LABEL, PodGroup, PodGroupSpec
from runtimes.api.trainer import (
    AnyTrainingRuntime,
    ClusterTrainingRuntime,
    MLPolicy,
    TrainingRuntime,
    TrainingRuntimeSpec,
    TrainJob,
    TrainJobSpec,
)

__all__ = [
    "POD_GROUP_LABEL",
    "AnyTrainingRuntime",
    "ClusterTrainingRuntime",
    "FailurePolicy",
    "JobSet",
    "JobSetSpec",
    "JobSpec",
    "JobTemplateSpec",
    "MLPolicy",
    "PodFailurePolicy",
    "PodFailurePolicyRule",
    "PodGroup",
    "PodGroupSpec",
    "ReplicatedJob",
    "SuccessPolicy",
    "TrainJob",
    "TrainJobSpec",
    "TrainingRuntime",
    "TrainingRuntimeSpec",
]
