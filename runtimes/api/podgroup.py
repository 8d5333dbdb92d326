"""PodGroup, scheduling.x-k8s.io/v1alpha1 (kubernetes-sigs/scheduler-plugins, coscheduling).

The same model holds Volcano's ``scheduling.volcano.sh/v1beta1`` PodGroup: its ``queue``,
``priorityClassName`` and ``networkTopology`` are kept as given (unknown fields round-trip).
"""

from __future__ import annotations

from pydantic import Field

from runtimes.k8s.meta import KubeModel, Resource
from runtimes.k8s.quantity import Quantity

PODGROUP_API_VERSION = "scheduling.x-k8s.io/v1alpha1"
PODGROUP_KIND = "PodGroup"
# The label that ties a pod to its PodGroup (schedulerpluginsv1alpha1.PodGroupLabel).
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


class PodGroupSpec(KubeModel):
    min_member: int | None = None
    min_resources: dict[str, Quantity] | None = None
    schedule_timeout_seconds: int | None = None


class PodGroupStatus(KubeModel):
    phase: str | None = None
    occupied_by: str | None = None
    scheduled: int | None = None
    running: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    schedule_start_time: str | None = None


class PodGroup(Resource):
    api_version: str = PODGROUP_API_VERSION
    kind: str = PODGROUP_KIND
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus | None = None
