"""batch/v1 Job template shapes, as a JobSet's replicated jobs embed them.

Typed where trainyard reads or writes (parallelism, completions, podFailurePolicy, the pod
template); every other Job field is kept as an extra so manifests round-trip unchanged.
"""

from __future__ import annotations

from pydantic import Field

from runtimes.k8s.core import PodTemplateSpec
from runtimes.k8s.meta import KubeModel, ObjectMeta

# Kubernetes podFailurePolicy actions (batch/v1 PodFailurePolicyAction).
POD_FAILURE_ACTIONS = ("FailJob", "FailIndex", "Ignore", "Count")


class PodFailurePolicyOnExitCodesRequirement(KubeModel):
    container_name: str | None = None
    operator: str  # In | NotIn
    values: list[int] = Field(default_factory=list)

    def matches(self, exit_code: int) -> bool:
        """Kubernetes' rule: ``In`` matches a listed code, ``NotIn`` any unlisted one."""
        listed = exit_code in self.values
        return listed if self.operator == "In" else not listed


class PodFailurePolicyOnPodConditionsPattern(KubeModel):
    type: str
    status: str | None = None  # defaults to "True" in Kubernetes


class PodFailurePolicyRule(KubeModel):
    action: str  # FailJob | FailIndex | Ignore | Count
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement | None = None
    on_pod_conditions: list[PodFailurePolicyOnPodConditionsPattern] | None = None


class PodFailurePolicy(KubeModel):
    rules: list[PodFailurePolicyRule] = Field(default_factory=list)


class JobSpec(KubeModel):
    parallelism: int | None = None
    completions: int | None = None
    completion_mode: str | None = None  # NonIndexed | Indexed (JobSet's webhook defaults Indexed)
    backoff_limit: int | None = None
    backoff_limit_per_index: int | None = None
    max_failed_indexes: int | None = None
    active_deadline_seconds: int | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    pod_replacement_policy: str | None = None
    suspend: bool | None = None
    ttl_seconds_after_finished: int | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class JobTemplateSpec(KubeModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSpec = Field(default_factory=JobSpec)
