"""The coscheduling pod-group policy: one PodGroup gangs every pod of the TrainJob.

Every pod gets the ``scheduling.x-k8s.io/pod-group`` label; the PodGroup's ``minMember`` is the
number of pods of all replicated jobs (initializers and launcher included, as Trainer counts)
and ``minResources`` their summed requests, so the coscheduling plugin admits all or none.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from runtimes.api.podgroup import POD_GROUP_LABEL, PODGROUP_API_VERSION, PODGROUP_KIND
from runtimes.api.trainer import TrainJob
from runtimes.k8s.core import PodSpec, pod_requests
from runtimes.k8s.quantity import format_amount, to_amount
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.owner import rendered_metadata

DEFAULT_SCHEDULE_TIMEOUT_SECONDS = 60


def gang_totals(info: RuntimeInfo) -> tuple[int, dict[str, str]]:
    """A PodGroup's ``minMember`` and ``minResources``: every pod of every replicated job
    (initializers and launcher included, as Trainer counts) and their summed requests."""
    min_member = 0
    totals: dict[str, Fraction] = {}
    for pod_set in info.pod_sets:
        pods = pod_set.total_pods
        min_member += pods
        pod_spec = info.pod_spec(pod_set.name) or {}
        for resource, quantity in pod_requests(PodSpec.model_validate(pod_spec)).items():
            totals[resource] = totals.get(resource, Fraction(0)) + quantity.value * pods
    resources = {
        resource: format_amount(resource, to_amount(resource, value)) for resource, value in sorted(totals.items())
    }
    return min_member, resources


def gang_spec(info: RuntimeInfo) -> dict[str, Any]:
    """The PodGroup spec's gang, as coscheduling's and Volcano's PodGroups both carry it:
    ``minMember``, and ``minResources`` when the pods request anything."""
    min_member, min_resources = gang_totals(info)
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources:
        spec["minResources"] = min_resources
    return spec


class CoschedulingPlugin:
    name = "coscheduling"

    def enforce_pod_group_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        if info.pod_group_policy is None or info.pod_group_policy.coscheduling is None:
            return
        info.pod_labels[POD_GROUP_LABEL] = info.trainjob_name

    def build(self, info: RuntimeInfo, trainjob: TrainJob) -> list[dict[str, Any]]:
        policy = info.pod_group_policy
        if policy is None or policy.coscheduling is None:
            return []
        timeout = policy.coscheduling.schedule_timeout_seconds or DEFAULT_SCHEDULE_TIMEOUT_SECONDS
        metadata = rendered_metadata(trainjob, info.namespace, info.trainjob_name)
        spec = gang_spec(info)
        spec["scheduleTimeoutSeconds"] = timeout
        return [{"apiVersion": PODGROUP_API_VERSION, "kind": PODGROUP_KIND, "metadata": metadata, "spec": spec}]
