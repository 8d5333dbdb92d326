"""A stand-in for the coscheduling plugin's PodGroup status (kubernetes-sigs/scheduler-plugins).

The plugin writes a PodGroup's status in two places, both played here from what the cache shows:
its controller (``pkg/controllers/podgroup_controller.go``) and the scheduler's ``PostBind``.

- A new PodGroup is ``Pending``; once ``minMember`` of its pods (label
  ``scheduling.x-k8s.io/pod-group``) exist it is ``PreScheduling``, with ``occupiedBy`` the sorted
  ``namespace/owner`` names of the first pod's owners.
- ``scheduled`` counts its pods bound to a node (PostBind adds one per binding): ``Scheduling``
  (with ``scheduleStartTime``) while fewer than ``minMember``, then ``Scheduled``.
- ``running``, ``succeeded`` and ``failed`` count its pods by phase; ``Scheduled`` becomes
  ``Running`` once running and succeeded reach ``minMember``; any failure with the rest
  accounted for makes it ``Failed``, ``minMember`` successes ``Finished``. Those two are final;
  a group whose pods are all gone goes back to ``Pending``.

Each reconcile makes the controller's one step and writes only a changed status.
"""

from __future__ import annotations

import copy
from typing import Any

from runtimes.api.podgroup import POD_GROUP_LABEL
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.runtime import ReconcileResult
from scheduler.kube import KubeClient, patch_status

from .conditions import now_text
from .keys import Standin, object_key, reconciled, split_key

FINAL_PHASES = ("Finished", "Failed")


def _phase_counts(pods: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"running": 0, "succeeded": 0, "failed": 0}
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        key = {"Running": "running", "Succeeded": "succeeded", "Failed": "failed"}.get(str(phase))
        if key is not None:
            counts[key] += 1
    return counts


def _occupied_by(pod: dict[str, Any]) -> str | None:
    namespace = pod["metadata"].get("namespace", "")
    owners = sorted(f"{namespace}/{ref.get('name')}" for ref in pod["metadata"].get("ownerReferences") or [])
    return ",".join(owners) or None


def next_status(group: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """The group's status after one step of the plugin's controller and PostBind."""
    status = copy.deepcopy(group.get("status") or {})
    minimum = int((group.get("spec") or {}).get("minMember") or 0)
    phase = status.get("phase") or ""
    if phase == "":
        status["phase"] = "Pending"
        return status
    if phase == "Pending":
        if pods and len(pods) >= minimum:
            status["phase"] = "PreScheduling"
            occupied = _occupied_by(pods[0])
            if occupied:
                status["occupiedBy"] = occupied
        return status
    status.update(_phase_counts(pods))
    if not pods:
        status["phase"] = "Pending"
        return status
    scheduled = sum(1 for pod in pods if (pod.get("spec") or {}).get("nodeName"))
    if scheduled and status.get("phase") in ("PreScheduling", "Scheduling"):
        status["scheduled"] = scheduled
        status["phase"] = "Scheduled" if scheduled >= minimum else "Scheduling"
        if status["phase"] == "Scheduling":
            status.setdefault("scheduleStartTime", now_text())
    if status["phase"] == "Scheduled" and status["succeeded"] + status["running"] >= minimum:
        status["phase"] = "Running"
    if status["failed"] and status["failed"] + status["running"] + status["succeeded"] >= minimum:
        status["phase"] = "Failed"
    if status["succeeded"] >= minimum:
        status["phase"] = "Finished"
    return status


class PodGroupStatusController(Standin):
    """Reconciles PodGroup keys; a pod's change requeues its group."""

    name = "podgroups-standin"

    def __init__(self, client: KubeClient, cache: ClusterCache, *, workers: int = 2) -> None:
        super().__init__(client, cache, workers=workers)
        # group key -> its pods' names, so a reconcile reads its members, not every pod of the namespace
        self.members: dict[str, set[str]] = {}
        cache.on_change("PodGroup", self._group_changed)
        cache.on_change("Pod", self._pod_changed)

    def _group_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is not None:
            self.queue.add(object_key(new))

    def _pod_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for pod, present in ((old, False), (new, True)):
            group = ((pod or {}).get("metadata") or {}).get("labels", {}).get(POD_GROUP_LABEL)
            if pod is None or not group:
                continue
            key = f"{pod['metadata'].get('namespace')}/{group}"
            names = self.members.setdefault(key, set())
            (names.add if present else names.discard)(pod["metadata"]["name"])
            self.queue.add(key)

    async def reconcile(self, key: str) -> ReconcileResult:
        return await reconciled(self._reconcile(key))

    async def _reconcile(self, key: str) -> float | None:
        namespace, name = split_key(key)
        group = self.cache.get("PodGroup", name, namespace)
        if group is None or (group.get("status") or {}).get("phase") in FINAL_PHASES:
            return None
        found = (self.cache.get("Pod", pod, namespace) for pod in sorted(self.members.get(key, ())))
        pods = [pod for pod in found if pod is not None]
        status = next_status(group, pods)
        if status == (group.get("status") or {}):
            return None
        metadata = group["metadata"]
        await patch_status(
            self.client,
            "PodGroup",
            name,
            namespace,
            status,
            resource_version=str(metadata["resourceVersion"]),
            attempts=1,
        )
        return None
