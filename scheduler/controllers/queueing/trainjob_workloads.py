"""TrainJob → Workload: what Kueue's job reconciler (jobframework) does for a queued TrainJob.

For a TrainJob with a ``kueue.x-k8s.io/queue-name`` label:

- it gets exactly one Workload, named as Kueue names it, owned by the TrainJob (``controller``,
  ``blockOwnerDeletion``), its pod sets from the rendered JobSet, priority from its
  WorkloadPriorityClass label; a TrainJob that is not suspended and has no Workload yet is
  suspended first (Kueue's webhook would have created it suspended);
- when it cannot be rendered (no runtime, an invalid spec) it gets a Warning Event and the
  condition ``WorkloadCreated=False`` instead, and is looked at again when its runtime changes;
- when it is Complete or Failed its Workload gets ``Finished=True`` (the engine then releases
  its quota).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    TRAINER_GROUP,
    TRAINING_RUNTIME_KIND,
    ClusterTrainingRuntime,
    TrainingRuntime,
    TrainJob,
)
from runtimes.errors import RenderError
from scheduler.api.kueue import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL, Workload
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.conditions import conditions_of, set_condition
from scheduler.controllers.events import NORMAL, WARNING, EventRecorder
from scheduler.controllers.manager import object_key
from scheduler.controllers.runtime import ReconcileResult
from scheduler.controllers.views import TrainJobView, WorkloadView
from scheduler.controllers.workload_status import finished_patch
from scheduler.kube import KubeClient, create_unless_exists, patch_status
from scheduler.trainjob import TRAINJOB_KIND, workload_for_trainjob, workload_name_for_owner

log = logging.getLogger(__name__)

WORKLOAD_CREATED = "WorkloadCreated"


def _runtime_of(trainjob: TrainJobView) -> tuple[str, str]:
    ref = trainjob.spec.get("runtimeRef") or {}
    return str(ref.get("kind") or CLUSTER_TRAINING_RUNTIME_KIND), str(ref.get("name") or "")


def _queued(trainjob: TrainJobView) -> bool:
    return bool(trainjob.labels.get(QUEUE_NAME_LABEL))


EXPECTATION_SECONDS = 30.0  # past this, a Workload the cache never showed is created again (or met 409)


class TrainJobWorkloads:
    name = "trainjob-workloads"

    def __init__(
        self,
        client: KubeClient,
        cache: ClusterCache,
        *,
        events: EventRecorder | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.cache = cache
        self.events = events
        self.clock = clock
        self.created = 0
        # Workloads this controller created that the cache does not show yet (controller-runtime's
        # "expectations"): key -> monotonic time of the create. A reconcile in that gap would only
        # meet 409 AlreadyExists; the Workload's own event brings the TrainJob back.
        self._expected: dict[str, float] = {}

    def enqueue_map(self) -> dict[str, Callable[[dict[str, Any] | None, dict[str, Any] | None], Iterable[str]]]:
        return {
            "TrainJob": lambda old, new: [object_key(new)] if new is not None else [],
            "Workload": self._owner_key,
            "TrainingRuntime": self._users_of_runtime,
            "ClusterTrainingRuntime": self._users_of_runtime,
            "WorkloadPriorityClass": self._users_of_priority_class,
        }

    def _owner_key(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
        document = new if new is not None else old
        metadata = (document or {}).get("metadata") or {}
        return [
            f"{metadata.get('namespace')}/{ref.get('name')}"
            for ref in metadata.get("ownerReferences") or ()
            if ref.get("kind") == "TrainJob" and ref.get("controller")
        ]

    def _users_of_runtime(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
        """TrainJobs without a Workload that name this runtime: it may render them now."""
        document = new if new is not None else old
        if document is None:
            return []
        metadata = document.get("metadata") or {}
        kind, name, namespace = document.get("kind"), metadata.get("name"), metadata.get("namespace")
        keys = []
        for cached in self.cache.list("TrainJob", namespace if kind == TRAINING_RUNTIME_KIND else None):
            trainjob = TrainJobView(cached)
            if _queued(trainjob) and _runtime_of(trainjob) == (kind, name):
                keys.append(trainjob.key)
        return keys

    def _users_of_priority_class(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
        """Queued TrainJobs that name this WorkloadPriorityClass: one that waited for it may queue now."""
        document = new if new is not None else old
        name = ((document or {}).get("metadata") or {}).get("name")
        trainjobs = (TrainJobView(cached) for cached in self.cache.list("TrainJob"))
        return [
            trainjob.key
            for trainjob in trainjobs
            if _queued(trainjob) and trainjob.labels.get(PRIORITY_CLASS_LABEL) == name
        ]

    def settled(self, key: str) -> bool:
        """A finished TrainJob whose Workload already says Finished: nothing left to write."""
        namespace, _, name = key.partition("/")
        document = self.cache.get("TrainJob", name, namespace)
        if document is None or not (trainjob := TrainJobView(document)).finished:
            return False
        workload = self.cache.get("Workload", self._workload_name(trainjob), namespace)
        return workload is not None and WorkloadView(workload).finished

    def _expect(self, workload_key: str) -> None:
        now = time.monotonic()
        if len(self._expected) > 10_000:  # TrainJobs deleted before the cache showed their Workload
            self._expected = {k: t for k, t in self._expected.items() if now - t < EXPECTATION_SECONDS}
        self._expected[workload_key] = now

    @staticmethod
    def _workload_name(trainjob: TrainJobView) -> str:
        return workload_name_for_owner(
            str(trainjob.metadata.get("name")), trainjob.uid or "", TRAINJOB_KIND, TRAINER_GROUP
        )

    async def reconcile(self, key: str) -> ReconcileResult:
        namespace, _, name = key.partition("/")
        document = self.cache.get("TrainJob", name, namespace)
        if document is None or not _queued(view := TrainJobView(document)):
            return ReconcileResult()
        # The Workload's name needs only the TrainJob's name and uid: a TrainJob that has its
        # Workload (every one, after the first reconcile) is not parsed again.
        workload_name = self._workload_name(view)
        workload_key = f"{namespace}/{workload_name}"
        existing = self.cache.get("Workload", workload_name, namespace)
        created_at = self._expected.get(workload_key)
        if existing is None and created_at is not None and time.monotonic() - created_at < EXPECTATION_SECONDS:
            return ReconcileResult(requeue_after=1.0)  # created a moment ago: the cache is behind
        self._expected.pop(workload_key, None)
        if existing is not None:
            await self._clear_failure(view)  # a refused clearing write is retried from here
            await self._sync_finished(view, WorkloadView(existing))
            return ReconcileResult()
        try:
            trainjob = TrainJob.model_validate(document)
        except ValidationError as error:
            await self._cannot_queue(view, "InvalidTrainJob", f"the TrainJob cannot be read: {error}")
            return ReconcileResult()
        if view.finished:
            return ReconcileResult()  # finished before it was ever queued here: nothing to admit
        kind, runtime_name = _runtime_of(view)
        runtime = self.cache.get(kind, runtime_name, namespace if kind == TRAINING_RUNTIME_KIND else None)
        if runtime is None:
            where = f" in namespace {namespace}" if kind == TRAINING_RUNTIME_KIND else ""
            await self._cannot_queue(
                view,
                "RuntimeNotFound",
                f"{kind} {runtime_name!r}{where} does not exist; create it or fix spec.runtimeRef",
            )
            return ReconcileResult()
        await self._suspend(view)
        try:
            runtime_model = (
                TrainingRuntime if kind == TRAINING_RUNTIME_KIND else ClusterTrainingRuntime
            ).model_validate(runtime)
            workload = workload_for_trainjob(trainjob, runtime_model)
        except (RenderError, ValueError) as error:
            await self._cannot_queue(view, "RenderFailed", f"the TrainJob cannot be rendered: {error}")
            return ReconcileResult()
        if not await self._set_priority(view, workload):
            return ReconcileResult()
        # one attempt: a transient failure backs the key off in the work queue
        if not await create_unless_exists(self.client, workload.to_dict(), attempts=1):
            return ReconcileResult()  # it exists: the cache is behind
        self._expect(workload_key)
        self.created += 1
        await self._clear_failure(view)
        if self.events is not None:
            await self.events.record(
                document, NORMAL, "CreatedWorkload", f"Created Workload: {namespace}/{workload.metadata.name}"
            )
        return ReconcileResult()

    async def _set_priority(self, trainjob: TrainJobView, workload: Workload) -> bool:
        """``spec.priority`` from the WorkloadPriorityClass the TrainJob names, or 0 without one, as
        Kueue's job reconciler sets it (its CRD refuses a priorityClassRef without a priority). A
        class that does not exist leaves the job unqueued until it does, as in Kueue."""
        reference = workload.spec.priority_class_ref
        if reference is None:
            workload.spec.priority = 0
            return True
        found = self.cache.get("WorkloadPriorityClass", reference.name)
        if found is None:
            await self._cannot_queue(
                trainjob,
                "WorkloadPriorityClassNotFound",
                f"WorkloadPriorityClass {reference.name!r} does not exist; create it or fix the "
                f"{PRIORITY_CLASS_LABEL} label",
            )
            return False
        workload.spec.priority = int(found.get("value") or 0)
        return True

    async def _suspend(self, trainjob: TrainJobView) -> None:
        """Kueue's webhook creates queued jobs suspended; one that got past it is suspended now."""
        if trainjob.suspended:
            return
        metadata = trainjob.metadata
        await self.client.patch(
            "TrainJob",
            str(metadata["name"]),
            {"metadata": {"resourceVersion": metadata["resourceVersion"]}, "spec": {"suspend": True}},
            metadata.get("namespace"),
        )

    async def _sync_finished(self, trainjob: TrainJobView, workload: WorkloadView) -> None:
        for kind, succeeded in (("Complete", True), ("Failed", False)):
            condition = trainjob.condition(kind)
            if condition is None or condition.get("status") != "True":
                continue
            message = str(condition.get("message") or f"TrainJob {kind.lower()}")
            patch = finished_patch(workload.document, succeeded, message, self.clock())
            if patch is None:
                return
            metadata = workload.metadata
            await patch_status(
                self.client,
                "Workload",
                metadata["name"],
                metadata.get("namespace"),
                patch,
                resource_version=str(metadata.get("resourceVersion")),
            )
            return

    async def _cannot_queue(self, trainjob: TrainJobView, reason: str, message: str) -> None:
        conditions = conditions_of(trainjob.document)
        generation = trainjob.metadata.get("generation")
        changed = set_condition(
            conditions, WORKLOAD_CREATED, False, reason, message,
            generation=generation if isinstance(generation, int) else None, now=self.clock(),
        )  # fmt: skip
        if not changed:
            return  # said already: no Event or write storm on every resync
        log.info("TrainJob %s not queued: %s", trainjob.key, message)
        if self.events is not None:
            await self.events.record(trainjob.document, WARNING, reason, message)
        await self._write_conditions(trainjob, conditions)

    async def _clear_failure(self, trainjob: TrainJobView) -> None:
        if trainjob.condition(WORKLOAD_CREATED) is None:
            return
        conditions = [c for c in conditions_of(trainjob.document) if c.get("type") != WORKLOAD_CREATED]
        await self._write_conditions(trainjob, conditions)

    async def _write_conditions(self, trainjob: TrainJobView, conditions: list[dict[str, Any]]) -> None:
        """Write the TrainJob's conditions at the revision read (the list replaces the server's, so
        a stale read must not win); a 409 propagates, so the key is retried from a fresh read (a
        conflict need not come with a newer object to wake this reconciler)."""
        metadata = trainjob.metadata
        await patch_status(
            self.client,
            "TrainJob",
            metadata["name"],
            metadata.get("namespace"),
            {"conditions": conditions},
            resource_version=str(metadata.get("resourceVersion")),
        )
