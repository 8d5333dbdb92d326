"""The ``Active`` condition of trainyard's AdmissionChecks, as each check's controller sets it.

Kueue admits nothing through a ClusterQueue whose AdmissionCheck is not ``Active``
(``AdmissionCheckInactive``); every admission-check controller says so of its own checks, as
Kueue's provisioning controller does (reason ``Active``, or why not). A check of
``controllerName: trainyard.io/topology`` is active when its ``parameters`` are left out (it
places on hosts) or name a kueue.x-k8s.io Topology that exists; keyed by AdmissionCheck name,
written at the resourceVersion read, only when the condition changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from scheduler.api.kueue import AdmissionCheck
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.conditions import conditions_of, set_condition
from scheduler.controllers.manager import KeyMapper, own_key
from scheduler.controllers.runtime import ReconcileResult
from scheduler.controllers.writes import ObjectWrites
from scheduler.engine import TOPOLOGY_CHECK_CONTROLLER, check_inactive_reason
from scheduler.kube import KubeClient

ACTIVE = "Active"
ACTIVE_MESSAGE = "The admission check is active"


class CheckActivityController:
    name = "topology-check-activity"

    def __init__(
        self,
        client: KubeClient,
        cache: ClusterCache,
        *,
        controller_name: str = TOPOLOGY_CHECK_CONTROLLER,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cache = cache
        self.controller_name = controller_name
        self.clock = clock
        self.writes = ObjectWrites(client)

    def enqueue_map(self) -> dict[str, KeyMapper[str]]:
        return {"AdmissionCheck": own_key, "Topology": self._checks_of_topology}

    def _ours(self, document: dict[str, Any]) -> bool:
        return bool((document.get("spec") or {}).get("controllerName") == self.controller_name)

    def _checks_of_topology(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[str]:
        """A Topology came or went: the checks whose parameters may name it."""
        return sorted(
            str(check["metadata"]["name"]) for check in self.cache.list("AdmissionCheck") if self._ours(check)
        )

    async def reconcile(self, key: str) -> ReconcileResult:
        document = self.cache.get("AdmissionCheck", key)
        if document is None or not self._ours(document):
            self.writes.forget("AdmissionCheck", key)
            return ReconcileResult()
        if self.writes.stale("AdmissionCheck", document):
            return ReconcileResult(requeue_after=0.5)
        topologies = {str(topology["metadata"]["name"]) for topology in self.cache.list("Topology")}
        why = check_inactive_reason(AdmissionCheck.model_validate(document), topologies)
        reason, message = why if why is not None else (ACTIVE, ACTIVE_MESSAGE)
        conditions = conditions_of(document)
        generation = (document.get("metadata") or {}).get("generation")
        changed = set_condition(
            conditions,
            ACTIVE,
            why is None,
            reason,
            message,
            generation=generation if isinstance(generation, int) else None,
            now=self.clock(),
        )
        if changed and not await self.writes.patch_status("AdmissionCheck", document, {"conditions": conditions}):
            return ReconcileResult(requeue=True)
        return ReconcileResult()
