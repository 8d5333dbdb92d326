"""Kueue's AdmissionCheck and the parameter objects its built-in controllers read.

A Workload must pass its ClusterQueue's admission checks after its quota is reserved and before it
is Admitted; ProvisioningRequestConfig and MultiKueueConfig/MultiKueueCluster are the parameters of
the two controllers Kueue ships. Models only: what the engine does with them is in
``scheduler.engine.admission_checks``, what the webhook rejects in ``scheduler.api.admission_check_rules``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from runtimes.k8s.meta import Condition, KubeModel, Resource
from scheduler.api.kueue_versions import KUEUE_V1BETA2

PROVISIONING_REQUEST_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


class AdmissionCheckParametersReference(KubeModel):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class AdmissionCheckSpec(KubeModel):
    controller_name: str = ""
    retry_delay_minutes: int | None = None  # v1beta1, deprecated and unused by Kueue
    parameters: AdmissionCheckParametersReference | None = None


class AdmissionCheckStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=list)


class AdmissionCheck(Resource):
    """A check a Workload must pass, after its quota is reserved, before it is Admitted."""

    api_version: str = KUEUE_V1BETA2
    kind: str = "AdmissionCheck"
    spec: AdmissionCheckSpec = Field(default_factory=AdmissionCheckSpec)
    status: AdmissionCheckStatus = Field(default_factory=AdmissionCheckStatus)


class ProvisioningRequestConfigSpec(KubeModel):
    provisioning_class_name: str = ""
    parameters: dict[str, str] = Field(default_factory=dict)
    managed_resources: list[str] = Field(default_factory=list)
    retry_strategy: dict[str, Any] | None = None
    pod_set_updates: dict[str, Any] | None = None
    pod_set_merge_policy: str | None = None


class ProvisioningRequestConfig(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "ProvisioningRequestConfig"
    spec: ProvisioningRequestConfigSpec = Field(default_factory=ProvisioningRequestConfigSpec)


class MultiKueueConfigSpec(KubeModel):
    clusters: list[str] = Field(default_factory=list)


class MultiKueueConfig(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "MultiKueueConfig"
    spec: MultiKueueConfigSpec = Field(default_factory=MultiKueueConfigSpec)


class MultiKueueClusterSpec(KubeModel):
    cluster_source: dict[str, Any] | None = None  # v1beta2
    kube_config: dict[str, Any] | None = None  # v1beta1


class MultiKueueCluster(Resource):
    api_version: str = KUEUE_V1BETA2
    kind: str = "MultiKueueCluster"
    spec: MultiKueueClusterSpec = Field(default_factory=MultiKueueClusterSpec)
    status: AdmissionCheckStatus = Field(default_factory=AdmissionCheckStatus)
