"""The launcher: starts a TrainJob once its Workload's admission is committed, stops it on eviction.

Shaped like Kueue's job framework (``pkg/controller/jobframework``): one generic reconciler,
keyed by TrainJob "namespace/name", and one small protocol, ``JobLauncher``, with an
implementation per launcher mode (the reconciler never branches on the mode):

- ``jobset`` (``launcher.jobset``): no Trainer controller on the cluster; trainyard renders the
  TrainJob itself, creates the JobSet and its companions, and mirrors the JobSet into the
  TrainJob's status;
- ``trainer`` (``launcher.trainer``): Kubeflow Trainer's controller creates the JobSet; trainyard
  writes what the admission decided as a ``runtimePatches`` entry and unsuspends, as Kueue does.

The reconciler reads the TrainJob and its Workload from the cache and decides, as Kueue's
``ReconcileGenericJob`` does: a finished job is only synced; a suspended job whose Workload is
committed-admitted is started; a running job whose Workload is not admitted (evicted,
preempted, gone) is stopped; anything else is synced (status, leftovers).
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from runtimes.api.trainer import DEFAULT_MANAGED_BY, TRAINER_GROUP, TrainJob
from scheduler.api.kueue import QUEUE_NAME_LABEL
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.launcher.pod_sets import workload_owned_by
from scheduler.controllers.launcher.trainjob_status import is_finished, now_rfc3339
from scheduler.controllers.manager import WatchSpec, object_key
from scheduler.controllers.runtime import ReconcileResult
from scheduler.controllers.views import TrainJobView, WorkloadView
from scheduler.controllers.writes import ObjectWrites
from scheduler.trainjob import TRAINJOB_KIND, workload_name_for_owner

log = logging.getLogger(__name__)

LauncherMode = Literal["jobset", "trainer"]
LAUNCHER_MODES: tuple[LauncherMode, ...] = ("jobset", "trainer")

# How long to wait for the cache to show a write this launcher made, before looking again anyway.
STALE_CACHE_RECHECK = 1.0


@dataclass
class LaunchContext:
    """One reconcile's view: the cached TrainJob (read-only) and its Workload, if it has one."""

    key: str
    trainjob: TrainJobView
    workload: WorkloadView | None
    cache: ClusterCache
    writes: ObjectWrites
    now: str = field(default_factory=now_rfc3339)

    @functools.cached_property
    def model(self) -> TrainJob:
        """The TrainJob parsed, only when a step needs it (a start renders it; most syncs do not)."""
        return TrainJob.model_validate(self.trainjob.document)

    @property
    def namespace(self) -> str:
        return str(self.trainjob.metadata["namespace"])

    @property
    def name(self) -> str:
        return self.trainjob.name

    @property
    def uid(self) -> str | None:
        return self.trainjob.uid

    @property
    def suspended(self) -> bool:
        return self.trainjob.suspended

    @property
    def admitted(self) -> bool:
        return self.workload is not None and self.workload.admission_committed

    def trainjob_copy(self) -> dict[str, Any]:
        """A copy of the cached TrainJob to change and write (the cache's own dict is never changed)."""
        return copy.deepcopy(self.trainjob.document)


class JobLauncher(Protocol):
    """One launcher mode, as Kueue's GenericJob: start with the pod-set info, stop, sync the rest.

    Each returns seconds until the key should be looked at again, or None.
    """

    mode: LauncherMode

    def watches(self) -> list[WatchSpec]: ...

    async def start(self, ctx: LaunchContext) -> float | None: ...

    async def stop(self, ctx: LaunchContext) -> float | None: ...

    async def sync(self, ctx: LaunchContext) -> float | None: ...


def managed_here(trainjob: TrainJobView) -> bool:
    """A TrainJob in a queue, run by the cluster's own controllers (not handed to MultiKueue)."""
    if not trainjob.labels.get(QUEUE_NAME_LABEL):
        return False
    return trainjob.managed_by in (None, DEFAULT_MANAGED_BY)


class LauncherReconciler:
    def __init__(self, launcher: JobLauncher, cache: ClusterCache, writes: ObjectWrites) -> None:
        self.launcher = launcher
        self.cache = cache
        self.writes = writes
        self.name = f"launcher-{launcher.mode}"

    def settled(self, key: str) -> bool:
        """A finished TrainJob: its status mirrored the JobSet's end in the write that finished it."""
        namespace, _, name = key.partition("/")
        trainjob = self.cache.get("TrainJob", name, namespace)
        return trainjob is not None and is_finished(trainjob.get("status"))

    async def reconcile(self, key: str) -> ReconcileResult:
        namespace, _, name = key.partition("/")
        document = self.cache.get("TrainJob", name, namespace)
        if document is None:
            self.writes.forget("TrainJob", key)
            return ReconcileResult()
        if self.writes.stale("TrainJob", document):
            return ReconcileResult(requeue_after=STALE_CACHE_RECHECK)
        trainjob = TrainJobView(document)
        if not managed_here(trainjob):
            return ReconcileResult()
        uid = trainjob.uid or ""
        workload = self.cache.get(
            "Workload", workload_name_for_owner(name, uid, TRAINJOB_KIND, TRAINER_GROUP), namespace
        )
        if workload is not None and not workload_owned_by(workload, uid or None):
            workload = None
        ctx = LaunchContext(
            key, trainjob, WorkloadView(workload) if workload is not None else None, self.cache, self.writes
        )
        if trainjob.finished:
            step = self.launcher.sync
        elif ctx.suspended and ctx.admitted:
            step = self.launcher.start
        elif not ctx.suspended and not ctx.admitted:
            step = self.launcher.stop
        else:
            step = self.launcher.sync
        conflicts = self.writes.conflicts
        requeue_after = await step(ctx)
        if requeue_after is None and self.writes.conflicts > conflicts:
            requeue_after = STALE_CACHE_RECHECK  # a write met a 409: look again at what the cache shows then
        return ReconcileResult(requeue_after=requeue_after)


# -------------------------------------------------------------------------------- wiring


def _owner_trainjob_keys(document: dict[str, Any] | None) -> list[str]:
    if document is None:
        return []
    metadata = document.get("metadata") or {}
    return [
        f"{metadata.get('namespace')}/{ref.get('name')}"
        for ref in metadata.get("ownerReferences") or ()
        if ref.get("kind") == "TrainJob" and ref.get("controller")
    ]


def owner_trainjob_keys(old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[str]:
    """A Workload's or JobSet's change -> the key of the TrainJob that controls it."""
    return sorted(set(_owner_trainjob_keys(old)) | set(_owner_trainjob_keys(new)))


def trainjob_key(old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[str]:
    document = new if new is not None else old
    return [object_key(document)] if document is not None else []
