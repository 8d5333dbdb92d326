"""Kueue's schema rules for AdmissionCheck and the objects its controllers take as parameters.

From ``apis/kueue/v1beta2`` (admissioncheck_types.go, provisioningrequestconfig_types.go,
multikueue_types.go): the CRDs' required fields, lengths and list bounds, and the immutable
``controllerName``. Pure functions: a parsed object (and the old one on update) in, errors out.
"""

from __future__ import annotations

from runtimes.errors import FieldError
from scheduler.api.kueue import AdmissionCheck, MultiKueueCluster, MultiKueueConfig, ProvisioningRequestConfig
from scheduler.api.names import dns_subdomain_error, qualified_name_error

MAX_CONTROLLER_NAME = 253
MAX_MANAGED_RESOURCES = 100
MAX_PROVISIONING_PARAMETERS = 100
MAX_MULTIKUEUE_CLUSTERS = 10


def validate_admission_check(check: AdmissionCheck, old: AdmissionCheck | None = None) -> list[FieldError]:
    spec = check.spec
    errors: list[FieldError] = []
    if not spec.controller_name:
        errors.append(
            FieldError(
                "spec.controllerName",
                "is required: the controller that runs this check, for example kueue.x-k8s.io/provisioning-request",
            )
        )
    elif len(spec.controller_name) > MAX_CONTROLLER_NAME:
        errors.append(FieldError("spec.controllerName", f"must be at most {MAX_CONTROLLER_NAME} characters"))
    if old is not None and old.spec.controller_name and old.spec.controller_name != spec.controller_name:
        errors.append(FieldError("spec.controllerName", "field is immutable"))
    parameters = spec.parameters
    if parameters is not None:
        for field, value, limit in (
            ("apiGroup", parameters.api_group, 253),
            ("kind", parameters.kind, 63),
            ("name", parameters.name, 63),
        ):
            if not value:
                errors.append(FieldError(f"spec.parameters.{field}", "is required when spec.parameters is given"))
            elif len(value) > limit:
                errors.append(FieldError(f"spec.parameters.{field}", f"must be at most {limit} characters"))
    return errors


def validate_provisioning_request_config(
    config: ProvisioningRequestConfig, old: ProvisioningRequestConfig | None = None
) -> list[FieldError]:
    spec = config.spec
    errors: list[FieldError] = []
    if not spec.provisioning_class_name:
        errors.append(
            FieldError("spec.provisioningClassName", "is required, for example check-capacity.autoscaling.x-k8s.io")
        )
    elif (problem := dns_subdomain_error(spec.provisioning_class_name)) is not None:
        errors.append(FieldError("spec.provisioningClassName", problem))
    if len(spec.managed_resources) > MAX_MANAGED_RESOURCES:
        errors.append(FieldError("spec.managedResources", f"must have at most {MAX_MANAGED_RESOURCES} items"))
    for index, resource in enumerate(spec.managed_resources):
        if (problem := qualified_name_error(resource)) is not None:
            errors.append(FieldError(f"spec.managedResources[{index}]", problem))
    if len(spec.parameters) > MAX_PROVISIONING_PARAMETERS:
        errors.append(FieldError("spec.parameters", f"must have at most {MAX_PROVISIONING_PARAMETERS} entries"))
    return errors


def validate_multikueue_config(config: MultiKueueConfig, old: MultiKueueConfig | None = None) -> list[FieldError]:
    clusters = config.spec.clusters
    errors: list[FieldError] = []
    if not 1 <= len(clusters) <= MAX_MULTIKUEUE_CLUSTERS:
        errors.append(
            FieldError(
                "spec.clusters", f"must list 1 to {MAX_MULTIKUEUE_CLUSTERS} MultiKueueClusters, got {len(clusters)}"
            )
        )
    seen: set[str] = set()
    for index, name in enumerate(clusters):
        if name in seen:
            errors.append(FieldError(f"spec.clusters[{index}]", f"duplicate cluster {name!r}"))
        seen.add(name)
    return errors


def validate_multikueue_cluster(cluster: MultiKueueCluster, old: MultiKueueCluster | None = None) -> list[FieldError]:
    spec = cluster.spec
    if spec.cluster_source is None and spec.kube_config is None:
        return [
            FieldError(
                "spec.clusterSource", "is required: how to reach the worker cluster (kubeConfig or clusterProfileRef)"
            )
        ]
    return []


ADMISSION_CHECK_VALIDATORS: dict[type, object] = {
    AdmissionCheck: validate_admission_check,
    ProvisioningRequestConfig: validate_provisioning_request_config,
    MultiKueueConfig: validate_multikueue_config,
    MultiKueueCluster: validate_multikueue_cluster,
}
