"""The pod ungater: pins each topology-placed pod to its placed node, then lifts its scheduling gate.

As Kueue's topology ungater (``pkg/controller/tas/topology_ungater.go``): pods of a
topology-placed pod set start with the ``kueue.x-k8s.io/topology`` scheduling gate; this
reconciler, keyed by Pod "namespace/name", finds the pod's Workload (annotation
``kueue.x-k8s.io/workload``) and pod set (label ``kueue.x-k8s.io/podset``), decodes that pod
set's ``topologyAssignment`` (beside Kueue: the placement trainyard's topology check answered
with, ``checked_placement``), computes the pod's rank

    rank = job index (label ``jobset.sigs.k8s.io/job-index``) × pods per Job
           + completion index (``batch.kubernetes.io/job-completion-index``)

where pods per Job = the pod set's count ÷ its Jobs (``subGroupCount``), and takes the domain
holding that rank (domains fill ranks in order). One update of the pod sets ``nodeSelector`` to
the domain's level labels (the node's hostname when the lowest level is the hostname) and
removes the gate; Kubernetes allows both on a gated pod since 1.27.

A pod whose rank the assignment does not (yet) cover, or whose Workload is not committed-admitted,
stays gated: it is never guessed onto a node. Nor is one pinned to a node the cache shows
NotReady: after a node failure the Job replaces the lost pod before the queue controller has
written the gang's new topologyAssignment, and that replacement must wait for it (the
re-placement, or the eviction) instead of failing on the dead node again. A change of its
Workload enqueues it again.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from runtimes.api.jobset import JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_LABEL
from runtimes.k8s.core import Node
from scheduler.api.topology_assignment import HOSTNAME_LABEL, TopologyAssignmentError, decode_topology_assignment
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.checked_placement import checked_topology_assignments
from scheduler.controllers.constants import (
    MANAGED_LABEL,
    MANAGED_SELECTOR,
    MANAGED_VALUE,
    PODSET_LABEL,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from scheduler.controllers.manager import WatchSpec, object_key
from scheduler.controllers.runtime import ReconcileResult
from scheduler.controllers.views import WorkloadView
from scheduler.controllers.writes import ObjectWrites

log = logging.getLogger(__name__)

UNGATER_WATCHES = [WatchSpec("Pod", MANAGED_SELECTOR), WatchSpec("Workload")]
REPLICATED_JOB_REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"


def is_gated(pod: Mapping[str, Any] | None) -> bool:
    if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    return any(gate.get("name") == TOPOLOGY_SCHEDULING_GATE for gate in gates)


def _index(pod: Mapping[str, Any], key: str) -> int | None:
    """An index from the pod's labels, else its annotations (Jobs set the completion index as both)."""
    metadata = pod.get("metadata") or {}
    raw = (metadata.get("labels") or {}).get(key)
    if raw is None:
        raw = (metadata.get("annotations") or {}).get(key)
    if raw is None or not str(raw).isdigit():
        return None
    return int(raw)


def pod_rank(pod: Mapping[str, Any], pod_set: Mapping[str, Any] | None, pod_set_count: int) -> int | None:
    """The pod's rank within its pod set, or None when its labels do not say."""
    completion = _index(pod, JOB_COMPLETION_INDEX_ANNOTATION)
    if completion is None:
        return None
    request = (pod_set or {}).get("topologyRequest") or {}
    groups = request.get("subGroupCount")
    if not groups:
        groups = _index(pod, REPLICATED_JOB_REPLICAS_LABEL) or 1
    job_index = _index(pod, str(request.get("subGroupIndexLabel") or JOB_INDEX_LABEL)) or 0
    pods_per_job = max(pod_set_count // int(groups), 1)
    return job_index * pods_per_job + completion


def placement_for_pod(pod: Mapping[str, Any], workload: Mapping[str, Any]) -> dict[str, str] | None:
    """The node selector that pins ``pod``, or None when the committed admission does not place it."""
    pod_set_name = ((pod.get("metadata") or {}).get("labels") or {}).get(PODSET_LABEL)
    assignments = ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ()
    assignment = next((a for a in assignments if a.get("name") == pod_set_name), None)
    if assignment is None:
        return None
    raw = assignment.get("topologyAssignment") or checked_topology_assignments(workload).get(str(pod_set_name))
    if not raw:
        return None
    pod_set = next(
        (p for p in (workload.get("spec") or {}).get("podSets") or () if p.get("name") == pod_set_name), None
    )
    decoded = decode_topology_assignment(raw)
    count = assignment.get("count")
    if count is None:
        count = (pod_set or {}).get("count", decoded.pod_count)
    rank = pod_rank(pod, pod_set, int(count))
    if rank is None:
        return None
    return decoded.node_selector_for_rank(rank)


class PodUngater:
    name = "pod-ungater"

    def __init__(self, cache: ClusterCache, writes: ObjectWrites) -> None:
        self.cache = cache
        self.writes = writes

    async def reconcile(self, key: str) -> ReconcileResult:
        namespace, _, name = key.partition("/")
        pod = self.cache.get("Pod", name, namespace)
        if not is_gated(pod):
            self.writes.forget("Pod", key)  # ungated (or gone): nothing of this pod is remembered
            return ReconcileResult()
        assert pod is not None
        if self.writes.stale("Pod", pod):
            return ReconcileResult(requeue_after=1.0)
        workload_name = ((pod.get("metadata") or {}).get("annotations") or {}).get(WORKLOAD_ANNOTATION)
        workload = self.cache.get("Workload", str(workload_name), namespace) if workload_name else None
        if workload is None or not WorkloadView(workload).admission_committed:
            return ReconcileResult()  # the Workload's next change enqueues this pod again
        try:
            selector = placement_for_pod(pod, workload)
        except TopologyAssignmentError as error:
            log.warning("ungater: pod %s stays gated: Workload %s/%s: %s", key, namespace, workload_name, error)
            return ReconcileResult()
        if selector is None:
            log.info("ungater: pod %s stays gated: its rank has no domain in Workload %s yet", key, workload_name)
            return ReconcileResult()
        failed = _failed_node(self.cache, selector)
        if failed is not None:
            log.info("ungater: pod %s stays gated: its placed node %s is not ready (re-placement pending)", key, failed)
            return ReconcileResult()
        ungated = copy.deepcopy(pod)
        spec = ungated.setdefault("spec", {})
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **selector}
        gates = [g for g in spec.get("schedulingGates") or () if g.get("name") != TOPOLOGY_SCHEDULING_GATE]
        if gates:
            spec["schedulingGates"] = gates
        else:
            spec.pop("schedulingGates", None)
        if await self.writes.replace("Pod", ungated) is not None:
            log.debug("ungater: pod %s -> %s", key, selector)
        return ReconcileResult()


def _failed_node(cache: ClusterCache, selector: Mapping[str, str]) -> str | None:
    """The node a hostname-level placement pins to, when the cache holds it and it is not Ready."""
    hostname = selector.get(HOSTNAME_LABEL)
    if hostname is None:
        return None
    node = cache.get("Node", hostname)
    if node is None:
        return None  # not watched here, or not seen yet: the binder and the scheduler decide
    try:
        return None if Node.model_validate(node).ready else hostname
    except ValueError:
        return None


def gated_pod_key(old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[str]:
    """A Pod change -> its key, while it carries the topology gate, and once more as it loses it."""
    document = new if new is not None else old
    if document is None or not (is_gated(new) or is_gated(old)):
        return []
    return [object_key(document)]


def gated_pod_keys_of_workload(
    cache: ClusterCache, old: dict[str, Any] | None, new: dict[str, Any] | None
) -> Iterable[str]:
    """A Workload change -> the keys of its gated pods (its admission may now place them)."""
    if new is None or not (workload := WorkloadView(new)).admission_committed:
        return []
    name, namespace = workload.name, workload.namespace
    return [
        object_key(pod)
        for pod in cache.list("Pod", namespace, labels={MANAGED_LABEL: MANAGED_VALUE})
        if is_gated(pod) and ((pod.get("metadata") or {}).get("annotations") or {}).get(WORKLOAD_ANNOTATION) == name
    ]
