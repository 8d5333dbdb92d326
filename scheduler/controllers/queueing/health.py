"""What the queue controller learns from Pods and Nodes: readiness and node failures.

- PodsReady (Kueue's waitForPodsReady): a Workload's pods carry its name in the
  ``kueue.x-k8s.io/workload`` annotation; once as many are Ready (or Succeeded) as the admission
  counts, the Workload gets PodsReady=True and the engine stops its timeout.
- Node failure: a Node that turns NotReady or is deleted under an admitted gang is handed to
  the engine (``AdmissionEngine.node_failed``): a gang it placed has its pods on that node moved
  within its domain (a new topologyAssignment is written; Kueue allows that under TAS) or is
  evicted with Kueue's reason ``NodeFailures``; any other admitted workload on the node (its
  topologyAssignment names it, or one of its pods runs there, e.g. admitted before a restart)
  is evicted with ``NodeFailures`` and requeued with backoff.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from scheduler.api.topology_assignment import HOSTNAME_LABEL, TopologyAssignmentError, decode_topology_assignment
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.constants import WORKLOAD_ANNOTATION
from scheduler.controllers.node_readiness import node_ready
from scheduler.controllers.requests import NodeRequest, WorkloadPodsRequest, WorkloadRequest
from scheduler.controllers.runtime import ReconcileResult
from scheduler.controllers.views import WorkloadView
from scheduler.controllers.workload_status import pods_ready_patch
from scheduler.engine import AdmissionEngine, EvictedWorkload, ReplacedPlacement

log = logging.getLogger(__name__)


def pods_request_for_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[WorkloadPodsRequest]:
    """A pod of a Workload's gang (its ``kueue.x-k8s.io/workload`` annotation) changed."""
    document = new if new is not None else old
    if document is None:
        return []
    metadata = document.get("metadata") or {}
    workload = (metadata.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
    return [WorkloadPodsRequest(WorkloadRequest(str(metadata.get("namespace")), str(workload)))] if workload else []


def _pod_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") == "Succeeded":
        return True
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def placed_nodes(workload: WorkloadView) -> set[str]:
    """The nodes an admitted Workload's topologyAssignments name (hostname-level placements)."""
    nodes: set[str] = set()
    for assignment in workload.pod_set_assignments:
        raw = assignment.get("topologyAssignment")
        if not raw:
            continue
        try:
            decoded = decode_topology_assignment(raw)
        except TopologyAssignmentError:
            continue
        if decoded.levels and decoded.levels[-1] == HOSTNAME_LABEL:
            nodes.update(decoded.pod_nodes())
    return nodes


class HealthWriter(Protocol):
    """What the checks need from the queue controller: its cache, engine, clock and writes."""

    cache: ClusterCache
    clock: Callable[[], float]

    @property
    def engine(self) -> AdmissionEngine: ...

    async def write_status(self, key: str, document: dict[str, Any], patch: dict[str, Any]) -> bool: ...

    async def write_node_failure_outcome(self, outcome: ReplacedPlacement | EvictedWorkload) -> bool: ...

    async def evict_for_node_failure(self, key: str, node: str) -> bool: ...


class HealthChecks:
    def __init__(self, controller: HealthWriter) -> None:
        self.controller = controller

    async def reconcile(self, request: NodeRequest | WorkloadPodsRequest) -> ReconcileResult:
        """False from a check means a write did not land: the request comes back with its backoff."""
        if isinstance(request, WorkloadPodsRequest):
            done = await self._pods_ready(request.workload)
        else:
            done = await self._node_failed(request.name)
        return ReconcileResult(requeue=not done)

    async def _pods_ready(self, request: WorkloadRequest) -> bool:
        controller = self.controller
        document = controller.cache.get("Workload", request.name, request.namespace)
        if document is None:
            return True
        workload = WorkloadView(document)
        expected = workload.admitted_pods
        if workload.finished or not expected:
            return True
        pods = [
            pod
            for pod in controller.cache.list("Pod", request.namespace)
            if ((pod.get("metadata") or {}).get("annotations") or {}).get(WORKLOAD_ANNOTATION) == request.name
        ]
        ready = sum(1 for pod in pods if _pod_ready(pod)) >= expected
        now = controller.clock()
        if ready:
            controller.engine.pods_ready(request.key, now)
        patch = pods_ready_patch(document, ready, now)
        # a refused write (a 409 from a stale cache, a busy server) is retried from the next cache read
        return patch is None or await controller.write_status(request.key, document, patch)

    async def _node_failed(self, node_name: str) -> bool:
        controller = self.controller
        node = controller.cache.get("Node", node_name)
        if node is not None and node_ready(node):
            return True  # recovered before we got to it
        failed: list[str] = []
        handled: set[str] = set()
        # gangs whose placement the engine holds: their pods on the node move, or they are evicted
        for outcome in controller.engine.node_failed(node_name, controller.clock()):
            handled.add(outcome.key)
            if not await controller.write_node_failure_outcome(outcome):
                failed.append(outcome.key)
        affected: set[str] = set()
        for document in controller.cache.list("Workload"):
            workload = WorkloadView(document)
            if workload.admission is not None and node_name in placed_nodes(workload):
                affected.add(workload.key)
        for pod in controller.cache.list("Pod"):
            if (pod.get("spec") or {}).get("nodeName") == node_name:
                metadata = pod.get("metadata") or {}
                workload_name = (metadata.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
                if workload_name:
                    affected.add(f"{metadata.get('namespace')}/{workload_name}")
        for key in sorted(affected - handled):
            if not await controller.evict_for_node_failure(key, node_name):
                failed.append(key)
        if failed:
            log.info("node %s failed: not yet written for %s; retrying with backoff", node_name, ", ".join(failed))
        return not failed
