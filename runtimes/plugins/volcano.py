"""The Volcano pod-group policy: a ``scheduling.volcano.sh/v1beta1`` PodGroup gangs every pod.

As Kubeflow Trainer's Volcano plugin: every pod gets the ``scheduling.k8s.io/group-name``
annotation naming the PodGroup (the TrainJob's name); the PodGroup's ``minMember`` and
``minResources`` count every pod of every replicated job, as for coscheduling; its ``queue``
comes from the ``scheduling.volcano.sh/queue-name`` annotation (the TrainJob's, else the
runtime template's), its ``priorityClassName`` from the pod templates, and ``networkTopology``
from the policy. Unset fields are left for Volcano's defaults (queue ``default``).
"""

from __future__ import annotations

from typing import Any

from runtimes.api.trainer import TrainJob
from runtimes.errors import FieldError
from runtimes.plugins.coscheduling import gang_spec
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.owner import rendered_metadata

VOLCANO_PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
VOLCANO_GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"


def _queue(info: RuntimeInfo, trainjob: TrainJob) -> str | None:
    for given in (trainjob.metadata.annotations or {}, info.jobset_annotations):
        if VOLCANO_QUEUE_ANNOTATION in given:
            return str(given[VOLCANO_QUEUE_ANNOTATION])
    return None


def _priority_class(info: RuntimeInfo) -> str | None:
    for pod_set in info.pod_sets:
        name = (info.pod_spec(pod_set.name) or {}).get("priorityClassName")
        if name:
            return str(name)
    return None


class VolcanoPlugin:
    name = "volcano"

    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
        if info.pod_group_policy is None or info.pod_group_policy.volcano is None:
            return []
        if _queue(info, trainjob) == "":
            return [
                FieldError(
                    f"metadata.annotations[{VOLCANO_QUEUE_ANNOTATION}]",
                    "Volcano queue name must not be empty: name a Volcano queue, or remove the "
                    "annotation for the queue 'default'",
                )
            ]
        return []

    def enforce_pod_group_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        if info.pod_group_policy is None or info.pod_group_policy.volcano is None:
            return
        info.pod_annotations[VOLCANO_GROUP_NAME_ANNOTATION] = info.trainjob_name

    def build(self, info: RuntimeInfo, trainjob: TrainJob) -> list[dict[str, Any]]:
        policy = info.pod_group_policy
        if policy is None or policy.volcano is None:
            return []
        spec = gang_spec(info)
        queue = _queue(info, trainjob)
        if queue:
            spec["queue"] = queue
        priority_class = _priority_class(info)
        if priority_class:
            spec["priorityClassName"] = priority_class
        if policy.volcano.get("networkTopology"):
            spec["networkTopology"] = dict(policy.volcano["networkTopology"])
        metadata = rendered_metadata(trainjob, info.namespace, info.trainjob_name)
        return [{"apiVersion": VOLCANO_PODGROUP_API_VERSION, "kind": "PodGroup", "metadata": metadata, "spec": spec}]
