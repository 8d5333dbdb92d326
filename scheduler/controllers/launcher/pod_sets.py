"""What an admission puts on a job's pods: Kueue's pod-set info, read from a committed Workload.

Kueue's job framework (``getPodSetsInfoFromStatus`` in ``pkg/controller/jobframework``) turns
each ``status.admission.podSetAssignments[i]`` into what the job's pod template must carry before
the job starts: the assigned ResourceFlavors' ``nodeLabels`` as ``nodeSelector`` and their
``tolerations``, the ``kueue.x-k8s.io/podset`` label and the ``kueue.x-k8s.io/workload``
annotation, and for a topology-placed pod set the ``kueue.x-k8s.io/topology`` scheduling gate
(the ungater later pins each pod to its node and lifts the gate). trainyard adds its own
``trainyard.io/managed`` label so its Pod and JobSet informers select exactly what it manages.

As Kueue does, the ``podSetUpdates`` of the Workload's admission checks are merged in (beside
Kueue, trainyard's topology check carries its placement there: its pod sets get the topology
scheduling gate too, for the ungater to pin each pod by rank).

Both launcher modes use this: ``jobset`` writes it into the JobSet it renders, ``trainer`` into
its ``runtimePatches`` entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.checked_placement import PLACEMENT_ANNOTATION
from scheduler.controllers.constants import (
    MANAGED_LABEL,
    MANAGED_VALUE,
    PODSET_LABEL,
    TAS_LABEL,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from scheduler.controllers.views import WorkloadView


class PodSetInfoError(Exception):
    """The admission names something the cache does not hold (yet): retry later."""


@dataclass
class PodSetInfo:
    name: str
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    scheduling_gates: list[str] = field(default_factory=list)


def workload_owned_by(workload: Mapping[str, Any], owner_uid: str | None) -> bool:
    """False only when the Workload names another controller (a TrainJob of the same name, deleted)."""
    references = (workload.get("metadata") or {}).get("ownerReferences") or []
    controllers = [ref for ref in references if ref.get("controller")]
    if not controllers or not owner_uid:
        return True
    return any(ref.get("uid") == owner_uid for ref in controllers)


def pod_set_infos(workload: WorkloadView, cache: ClusterCache) -> dict[str, PodSetInfo]:
    """Pod-set name -> what its pods carry, from the Workload's admission and the ResourceFlavors."""
    workload_name = workload.name
    infos: dict[str, PodSetInfo] = {}
    for assignment in workload.pod_set_assignments:
        name = str(assignment.get("name") or "main")
        info = PodSetInfo(
            name=name,
            labels={MANAGED_LABEL: MANAGED_VALUE, PODSET_LABEL: name},
            annotations={WORKLOAD_ANNOTATION: workload_name},
        )
        for flavor_name in sorted(set((assignment.get("flavors") or {}).values())):
            flavor = cache.get("ResourceFlavor", str(flavor_name))
            if flavor is None:
                raise PodSetInfoError(
                    f"Workload {workload_name!r} pod set {name!r} is assigned ResourceFlavor {flavor_name!r}, "
                    "which the cache does not hold"
                )
            spec = flavor.get("spec") or {}
            info.node_selector.update({str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()})
            for toleration in spec.get("tolerations") or ():
                if toleration not in info.tolerations:
                    info.tolerations.append(dict(toleration))
        if assignment.get("topologyAssignment"):
            info.labels[TAS_LABEL] = "true"
            info.scheduling_gates.append(TOPOLOGY_SCHEDULING_GATE)
        _merge_check_updates(info, workload)
        infos[name] = info
    return infos


def _merge_check_updates(info: PodSetInfo, workload: WorkloadView) -> None:
    """Kueue's ``getPodSetsInfoFromStatus``: each admission check's ``podSetUpdates`` for the pod set."""
    for state in workload.admission_checks:
        for update in state.get("podSetUpdates") or ():
            if update.get("name") != info.name:
                continue
            info.labels.update({str(k): str(v) for k, v in (update.get("labels") or {}).items()})
            info.annotations.update({str(k): str(v) for k, v in (update.get("annotations") or {}).items()})
            info.node_selector.update({str(k): str(v) for k, v in (update.get("nodeSelector") or {}).items()})
            for toleration in update.get("tolerations") or ():
                if toleration not in info.tolerations:
                    info.tolerations.append(dict(toleration))
    if PLACEMENT_ANNOTATION in info.annotations and TOPOLOGY_SCHEDULING_GATE not in info.scheduling_gates:
        info.scheduling_gates.append(TOPOLOGY_SCHEDULING_GATE)


def merge_into_pod_template(pod_template: dict[str, Any], info: PodSetInfo) -> None:
    """Kueue's ``podset.Merge``: add the info to a pod template (a dict, changed in place)."""
    metadata = pod_template.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **info.labels}
    metadata["annotations"] = {**(metadata.get("annotations") or {}), **info.annotations}
    spec = pod_template.setdefault("spec", {})
    if info.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **info.node_selector}
    if info.tolerations:
        tolerations = list(spec.get("tolerations") or [])
        tolerations.extend(t for t in info.tolerations if t not in tolerations)
        spec["tolerations"] = tolerations
    if info.scheduling_gates:
        gates = list(spec.get("schedulingGates") or [])
        present = {gate.get("name") for gate in gates}
        gates.extend({"name": gate} for gate in info.scheduling_gates if gate not in present)
        spec["schedulingGates"] = gates


def pod_template_patch(info: PodSetInfo) -> dict[str, Any]:
    """The pod template part of a Trainer ``ReplicatedJobPatch`` carrying ``info``."""
    spec: dict[str, Any] = {}
    if info.node_selector:
        spec["nodeSelector"] = dict(info.node_selector)
    if info.tolerations:
        spec["tolerations"] = [dict(t) for t in info.tolerations]
    if info.scheduling_gates:
        spec["schedulingGates"] = [{"name": gate} for gate in info.scheduling_gates]
    template: dict[str, Any] = {"metadata": {"labels": dict(info.labels), "annotations": dict(info.annotations)}}
    if spec:
        template["spec"] = spec
    return template
