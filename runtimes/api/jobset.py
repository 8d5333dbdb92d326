"""JobSet, jobset.x-k8s.io/v1alpha2 (kubernetes-sigs/jobset ``api/jobset/v1alpha2/jobset_types.go``).

Defaults that JobSet's own webhook fills (replicas 1, enableDNSHostnames true, successPolicy
All, startupPolicy AnyOrder) are *not* filled here: a model keeps what was written, and readers
use the ``effective_*`` helpers for the defaulted value.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from runtimes.api.batch import JobTemplateSpec
from runtimes.k8s.meta import Condition, KubeModel, Resource

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSET_KIND = "JobSet"

# Labels JobSet puts on its Jobs and Pods.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
JOB_COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"

FAILURE_POLICY_ACTIONS = (
    "FailJobSet",
    "RestartJobSet",
    "RestartJobSetAndIgnoreMaxRestarts",
    "RestartJob",
    "RestartJobAndIgnoreMaxRestarts",
)
JOB_FAILURE_REASONS = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
)


class DependsOn(KubeModel):
    name: str
    status: str  # Ready | Complete


class ReplicatedJob(KubeModel):
    name: str
    group_name: str | None = None
    template: JobTemplateSpec = Field(default_factory=JobTemplateSpec)
    replicas: int | None = None
    depends_on: list[DependsOn] | None = None

    @property
    def effective_replicas(self) -> int:
        return 1 if self.replicas is None else self.replicas

    @property
    def pods_per_job(self) -> int:
        """Pods one Job of this replicated job runs at once: min(parallelism, completions)."""
        spec = self.template.spec
        parallelism = 1 if spec.parallelism is None else spec.parallelism
        completions = parallelism if spec.completions is None else spec.completions
        return min(parallelism, completions)


class Network(KubeModel):
    enable_dns_hostnames: bool | None = Field(default=None, alias="enableDNSHostnames")
    subdomain: str | None = None
    publish_not_ready_addresses: bool | None = None


class SuccessPolicy(KubeModel):
    operator: str = "All"  # All | Any
    target_replicated_jobs: list[str] | None = None


class FailurePolicyRule(KubeModel):
    name: str | None = None
    action: str
    on_job_failure_reasons: list[str] | None = None
    on_job_failure_message_patterns: list[str] | None = None
    target_replicated_jobs: list[str] | None = None


class FailurePolicy(KubeModel):
    max_restarts: int | None = None
    restart_strategy: str | None = None  # Recreate | BlockingRecreate | InPlaceRestart
    rules: list[FailurePolicyRule] | None = None


class StartupPolicy(KubeModel):
    startup_policy_order: str = "AnyOrder"  # AnyOrder | InOrder


class Coordinator(KubeModel):
    replicated_job: str
    job_index: int | None = None
    pod_index: int | None = None


class JobSetSpec(KubeModel):
    replicated_jobs: list[ReplicatedJob] = Field(default_factory=list)
    network: Network | None = None
    success_policy: SuccessPolicy | None = None
    failure_policy: FailurePolicy | None = None
    startup_policy: StartupPolicy | None = None
    suspend: bool | None = None
    coordinator: Coordinator | None = None
    managed_by: str | None = None
    ttl_seconds_after_finished: int | None = None
    volume_claim_policies: list[dict[str, Any]] | None = None

    def replicated_job(self, name: str) -> ReplicatedJob | None:
        return next((job for job in self.replicated_jobs if job.name == name), None)


class ReplicatedJobStatus(KubeModel):
    name: str
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0


class JobSetStatus(KubeModel):
    conditions: list[Condition] | None = None
    restarts: int | None = None
    restarts_count_towards_max: int | None = None
    terminal_state: str | None = None
    replicated_jobs_status: list[ReplicatedJobStatus] | None = None


class JobSet(Resource):
    api_version: str = JOBSET_API_VERSION
    kind: str = JOBSET_KIND
    spec: JobSetSpec = Field(default_factory=JobSetSpec)
    status: JobSetStatus | None = None

    @property
    def subdomain(self) -> str:
        """The headless Service's name: ``spec.network.subdomain``, else the JobSet's name."""
        network = self.spec.network
        return network.subdomain if network is not None and network.subdomain else self.metadata.name
