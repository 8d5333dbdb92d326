"""The controller of trainyard's topology AdmissionCheck, beside a real Kueue.

Kueue reserves quota and owns the Workload; for each Workload with ``QuotaReserved`` whose
``status.admissionChecks`` name a check of ``controllerName: trainyard.io/topology``, this
reconciler (keyed by Workload "namespace/name") asks the engine's gang placer for a placement on
the check's Topology within the flavors Kueue assigned (``scheduler.engine.TopologyCheck``) and
answers as admission-check controllers do (``admission_check.check_state``): ``Ready`` with
``podSetUpdates`` carrying the placement, ``Retry`` with the reason and a requeue delay, or
``Rejected``. Level-triggered: every reconcile reads the Workload from the cache and converges —

- not reserved (evicted, finished, deleted, or its checks reset by Kueue): the placement is
  forgotten and its nodes are free for the next gang;
- our check Pending: place now, write the answer at the resourceVersion read; a write that fails
  is tried again with the same placement (the engine keeps it, never a second reservation);
- our check Ready: the engine holds its nodes (restored from the podSetUpdates after a restart);
  if a node under it failed (a ``NodeRequest``, from a Node going NotReady or away), the failed
  node's pods are re-placed inside the domain and the new placement is written in the Workload's
  ``trainyard.io/replaced-placement`` annotation, or, with no room there, the check turns
  ``Retry`` and Kueue evicts and requeues the gang.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from runtimes.k8s.core import Node
from scheduler.api.kueue import KUEUE_KINDS, Workload
from scheduler.controllers.admission_check.check_state import (
    PENDING,
    REJECTED,
    RETRY,
    check_state,
    pod_set_updates,
    replaced_placement_annotation,
    retry_delay,
    states_with,
    with_topology_assignments,
)
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.checked_placement import READY, REPLACED_PLACEMENT_ANNOTATION, checked_topology_assignments
from scheduler.controllers.events import NORMAL, WARNING, EventRecorder
from scheduler.controllers.manager import KeyMapper
from scheduler.controllers.node_readiness import node_ready, node_request_for_change
from scheduler.controllers.requests import CheckRequest, NodeRequest, WorkloadRequest
from scheduler.controllers.runtime import ReconcileResult
from scheduler.controllers.views import WorkloadView
from scheduler.controllers.workload_status import topology_assignments
from scheduler.controllers.writes import ObjectWrites
from scheduler.engine import (
    TOPOLOGY_CHECK_CONTROLLER,
    AdmissionEngine,
    CheckPlacement,
    EngineConfig,
    EvictedWorkload,
    TopologyCheck,
)
from scheduler.kube import KubeClient

log = logging.getLogger(__name__)

# What the check's engine is built from: Kueue's objects and the Nodes to place on.
INPUT_KINDS = ("ResourceFlavor", "Topology", "ClusterQueue", "Cohort", "AdmissionCheck", "Node")
STALE_CACHE_RECHECK = 0.5


class TopologyCheckController:
    name = "topology-check"

    def __init__(
        self,
        client: KubeClient,
        cache: ClusterCache,
        *,
        config: EngineConfig | None = None,
        controller_name: str = TOPOLOGY_CHECK_CONTROLLER,
        events: EventRecorder | None = None,
        clock: Callable[[], float] = time.time,
        retry_base: float = 10.0,
        retry_max: float = 300.0,
    ) -> None:
        self.client = client
        self.cache = cache
        self.config = config
        self.controller_name = controller_name
        self.events = events
        self.clock = clock
        self.retry_base = retry_base
        self.retry_max = retry_max
        self.writes = ObjectWrites(client)
        self.check = TopologyCheck(AdmissionEngine(config), controller_name)
        self.queue_add: Callable[[CheckRequest], None] | None = None  # set by bind()
        # Workloads whose gang lost a node with no room in its domain: their check turns Retry.
        self._node_failures: dict[str, str] = {}
        for kind in INPUT_KINDS:
            cache.on_change(kind, self._input_changed)

    # ------------------------------------------------------------------ the engine's inputs

    def _input_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            assert old is not None
            metadata = old.get("metadata") or {}
            self.check.delete(str(old.get("kind")), str(metadata.get("name")))
            return
        try:
            self.check.apply(self._model(new))
        except (ValidationError, ValueError) as error:
            log.warning("topology check: %s %s is not readable, left out: %s", new.get("kind"), _name(new), error)

    @staticmethod
    def _model(document: dict[str, Any]) -> Any:
        kind = str(document.get("kind"))
        return Node.model_validate(document) if kind == "Node" else KUEUE_KINDS[kind].model_validate(document)

    async def run_alongside(self) -> None:
        """The Event sender, for as long as the controller runs."""
        if self.events is not None:
            await self.events.run()

    async def prepare(self) -> None:
        """A new term: the engine is built afresh from the cache, placed gangs hold their nodes again."""
        self.check = TopologyCheck(AdmissionEngine(self.config), self.controller_name)
        self._node_failures.clear()
        for kind in INPUT_KINDS:
            for document in self.cache.list(kind):
                self._input_changed(None, document)
        now = self.clock()
        for document in self.cache.list("Workload"):
            workload = WorkloadView(document)
            if self._ours(workload) and workload.quota_reserved and self._all_ready(workload):
                self._restore(workload, now)
        for node in self.cache.list("Node"):
            if not node_ready(node):
                self._node_failed(_name(node), now)

    def bind(self, add: Callable[[CheckRequest], None]) -> None:
        """Give the controller its work queue's ``add`` (a failed node queues the gangs on it)."""
        self.queue_add = add

    def enqueue_map(self) -> dict[str, KeyMapper[CheckRequest]]:
        return {
            "Workload": own_workload_request,
            "Node": node_request_for_change,
            "AdmissionCheck": self._pending_of_check,
        }

    def _pending_of_check(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[CheckRequest]:
        """An AdmissionCheck that became ours (or active): the Workloads waiting on it."""
        document = new if new is not None else old
        if document is None:
            return []
        name = _name(document)
        return [
            WorkloadRequest.of(workload)
            for workload in self.cache.list("Workload")
            if (state := check_state(workload, name)) is not None and state.get("state") == PENDING
        ]

    # ------------------------------------------------------------------ the reconciler

    async def reconcile(self, request: CheckRequest) -> ReconcileResult:
        now = self.clock()
        if isinstance(request, NodeRequest):
            if (node := self.cache.get("Node", request.name)) is None or not node_ready(node):
                for affected in self._node_failed(request.name, now):
                    if self.queue_add is not None:
                        self.queue_add(WorkloadRequest.parse(affected))
            return ReconcileResult()
        document = self.cache.get("Workload", request.name, request.namespace)
        if document is None:
            self._forget(request.key, now)
            return ReconcileResult()
        if self.writes.stale("Workload", document):
            return ReconcileResult(requeue_after=STALE_CACHE_RECHECK)
        workload = WorkloadView(document)
        ours = self._ours(workload)
        if not ours or not workload.quota_reserved:
            self._forget(workload.key, now)
            return ReconcileResult()
        states = {str(state.get("state")) for state in ours}
        if RETRY in states or REJECTED in states:
            self._forget(workload.key, now)  # Kueue evicts it (Retry) or deactivates it (Rejected)
            return ReconcileResult()
        if states == {READY}:
            return await self._keep_placed(workload, now)
        return await self._answer(workload, now)

    def _ours(self, workload: WorkloadView) -> list[Mapping[str, Any]]:
        return [state for state in workload.admission_checks if self.check.owns(str(state.get("name")))]

    @staticmethod
    def _all_ready(workload: WorkloadView) -> bool:
        return all(state.get("state") == READY for state in workload.admission_checks)

    def _forget(self, key: str, now: float) -> None:
        self.check.release(key, now)
        self._node_failures.pop(key, None)
        self.writes.forget("Workload", key)

    def _restore(self, workload: WorkloadView, now: float) -> None:
        notes = self.check.restore(Workload.model_validate(with_topology_assignments(workload.document)), now)
        if notes:
            log.info("topology check: restored Workload %s: %s", workload.key, notes)

    # ------------------------------------------------------------------ answers

    async def _answer(self, workload: WorkloadView, now: float) -> ReconcileResult:
        """Our check is Pending: place the gang and write Ready, Retry or Rejected."""
        document = workload.document
        decision = self.check.place(Workload.model_validate(document), now)
        names = [str(state["name"]) for state in self._ours(workload) if state.get("state") != READY]
        if decision.state == READY:
            assert decision.admission is not None
            updates = pod_set_updates(decision.admission)
            states = states_with(document, names, READY, decision.message, now, updates=updates)
        else:
            delay = None
            if decision.state == RETRY:
                delay = retry_delay(check_state(document, names[0]), self.retry_base, self.retry_max)
            states = states_with(document, names, decision.state, decision.message, now, requeue_after=delay)
        if states is None:
            return ReconcileResult()
        if not await self.writes.patch_status("Workload", document, {"admissionChecks": states}):
            return ReconcileResult(requeue=True)  # the cache was behind; a placement made is kept
        await self._event(document, decision)
        return ReconcileResult()

    async def _keep_placed(self, workload: WorkloadView, now: float) -> ReconcileResult:
        """Our check is Ready: hold the gang's nodes, and follow a node failure under it."""
        document = workload.document
        failure = self._node_failures.get(workload.key)
        if failure is not None:
            names = [str(state["name"]) for state in self._ours(workload)]
            delay = retry_delay(check_state(document, names[0]), self.retry_base, self.retry_max)
            states = states_with(document, names, RETRY, failure, now, requeue_after=delay)
            if states is not None and not await self.writes.patch_status(
                "Workload", document, {"admissionChecks": states}
            ):
                return ReconcileResult(requeue=True)
            await self._record(document, WARNING, "TopologyRetry", failure)
            return ReconcileResult()
        held = self.check.placed(workload.key)
        if held is None:
            self._restore(workload, now)
            return ReconcileResult()
        placed = topology_assignments(held)
        if placed == checked_topology_assignments(document):
            return ReconcileResult()
        replaced = dict(document)
        metadata = dict(document.get("metadata") or {})
        annotations = dict(metadata.get("annotations") or {})
        annotations[REPLACED_PLACEMENT_ANNOTATION] = replaced_placement_annotation(document, held)
        replaced["metadata"] = {**metadata, "annotations": annotations}
        if await self.writes.replace("Workload", replaced) is None:
            return ReconcileResult(requeue=True)
        message = "a failed node's pods were placed again inside the gang's domain"
        await self._record(document, WARNING, "TopologyReplaced", message)
        return ReconcileResult()

    def _node_failed(self, node: str, now: float) -> list[str]:
        """Gangs on a failed node: re-placed in the engine, or marked for Retry; their keys."""
        keys = []
        for outcome in self.check.node_failed(node, now):
            keys.append(outcome.key)
            if isinstance(outcome, EvictedWorkload):
                self._node_failures[outcome.key] = outcome.message
        if keys:
            log.info("topology check: node %s failed under %s", node, ", ".join(keys))
        return keys

    async def _event(self, document: dict[str, Any], decision: CheckPlacement) -> None:
        if decision.state == READY:
            await self._record(document, NORMAL, "TopologyPlaced", decision.message)
        else:
            await self._record(document, WARNING, f"Topology{decision.state}", decision.message)

    async def _record(self, document: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        if self.events is not None:
            await self.events.record(document, event_type, reason, message)


def _name(document: dict[str, Any]) -> str:
    return str((document.get("metadata") or {}).get("name", ""))


def own_workload_request(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[CheckRequest]:
    document = new if new is not None else old
    return [WorkloadRequest.of(document)] if document is not None else []
