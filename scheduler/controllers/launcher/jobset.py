"""The ``jobset`` launcher mode: trainyard renders the admitted TrainJob and creates its JobSet.

For clusters with the JobSet controller and no Kubeflow Trainer controller. On start it renders
the TrainJob with its (Cluster)TrainingRuntime from the cache (the same ``runtimes`` pipeline
the webhook and the queue controller use), merges the admission's pod-set info into every
replicated job's pod template, creates the PodGroup, MPI Secret and ConfigMap and then the
JobSet, all owned by the TrainJob and named after it (a repeated create answers 409
AlreadyExists and counts as done), and unsuspends the TrainJob. Four writes per admitted torch
job at most: PodGroup, JobSet, the TrainJob's unsuspend (status writes aside).

On eviction it suspends the TrainJob and **deletes** the JobSet (its Jobs and pods follow by
garbage collection). Suspending the JobSet instead would keep pod templates that carry the old
admission's flavor node selector and tolerations; changing them on a suspended JobSet needs a
JobSet release that allows template mutation while suspended (jobset#624), and the next
admission may pick another flavor. A fresh render at the next admission is always right; the
PodGroup, Secret and ConfigMap stay (the next start's create of them is a no-op).

It mirrors the JobSet into the TrainJob's status as Trainer would (``trainjob_status``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    TRAINER_GROUP,
    AnyTrainingRuntime,
    ClusterTrainingRuntime,
    TrainingRuntime,
)
from runtimes.render import render_trainjob
from scheduler.controllers.constants import MANAGED_LABEL, MANAGED_SELECTOR, MANAGED_VALUE, WORKLOAD_ANNOTATION
from scheduler.controllers.launcher.pod_sets import merge_into_pod_template, pod_set_infos
from scheduler.controllers.launcher.reconciler import LaunchContext, LauncherMode
from scheduler.controllers.launcher.trainjob_status import status_differs, trainjob_status
from scheduler.controllers.manager import WatchSpec
from scheduler.controllers.writes import resource_version

log = logging.getLogger(__name__)

# While a deleted JobSet is still going away (finalizers, foreground deletion), look again after this.
JOBSET_GONE_RECHECK = 1.0
# How long a JobSet this launcher created may stay out of the cache before the launcher believes
# the cache (the JobSet was deleted meanwhile) and creates it again.
JOBSET_EXPECTED_FOR = 5.0
_EXPECTATIONS_KEPT = 1024  # past this many, the lapsed ones are dropped


class RuntimeMissing(Exception):
    """The TrainJob's runtime is not in the cache; the reconcile is retried with backoff."""


def runtime_of(ctx: LaunchContext) -> AnyTrainingRuntime:
    ref = ctx.model.spec.runtime_ref
    if ref.effective_api_group != TRAINER_GROUP:
        raise RuntimeMissing(f"TrainJob {ctx.key}: runtimeRef.apiGroup {ref.api_group!r} is not {TRAINER_GROUP}")
    if ref.effective_kind == CLUSTER_TRAINING_RUNTIME_KIND:
        found = ctx.cache.get(CLUSTER_TRAINING_RUNTIME_KIND, ref.name)
        if found is not None:
            return ClusterTrainingRuntime.model_validate(found)
    else:
        found = ctx.cache.get("TrainingRuntime", ref.name, ctx.namespace)
        if found is not None:
            return TrainingRuntime.model_validate(found)
    raise RuntimeMissing(f"TrainJob {ctx.key}: {ref.effective_kind} {ref.name!r} is not in the cache")


def owned_jobset(ctx: LaunchContext) -> dict[str, Any] | None:
    """The TrainJob's JobSet from the cache, if this TrainJob controls it."""
    jobset = ctx.cache.get("JobSet", ctx.name, ctx.namespace)
    if jobset is None:
        return None
    references = (jobset.get("metadata") or {}).get("ownerReferences") or []
    if ctx.uid and not any(ref.get("uid") == ctx.uid for ref in references):
        return None
    return jobset


def launch_objects(ctx: LaunchContext) -> list[dict[str, Any]]:
    """The objects to create for an admitted TrainJob, the JobSet last (it starts the pods)."""
    assert ctx.workload is not None
    live = ctx.model.model_copy(deep=True)
    # The JobSet starts running: it is created unsuspended, as Trainer renders a resumed TrainJob.
    live.spec.suspend = False
    rendered = render_trainjob(live, runtime_of(ctx))
    infos = pod_set_infos(ctx.workload, ctx.cache)
    jobset = rendered.jobset.to_dict()
    metadata = jobset.setdefault("metadata", {})
    metadata["namespace"] = ctx.namespace
    metadata["labels"] = {**(metadata.get("labels") or {}), MANAGED_LABEL: MANAGED_VALUE}
    workload_name = ctx.workload.name
    metadata["annotations"] = {**(metadata.get("annotations") or {}), WORKLOAD_ANNOTATION: workload_name}
    spec = jobset.setdefault("spec", {})
    spec["suspend"] = False
    for job in spec.get("replicatedJobs") or ():
        info = infos.get(str(job.get("name", "")).lower())
        if info is None:
            continue
        pod_template = job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        merge_into_pod_template(pod_template, info)
    companions = [*rendered.objects()[1:]]
    for companion in companions:
        companion.setdefault("metadata", {}).setdefault("namespace", ctx.namespace)
    return [*companions, jobset]


class JobSetLauncher:
    mode: LauncherMode = "jobset"

    def __init__(self) -> None:
        # TrainJob key -> monotonic time this launcher created its JobSet, until the cache shows
        # it ("expectations"): a sync in that gap would write the TrainJob's status without the
        # JobSet, then again with it, and POST the JobSet a second time into a 409.
        self._created: dict[str, float] = {}

    def watches(self) -> list[WatchSpec]:
        return [
            WatchSpec("TrainJob"),
            WatchSpec("Workload"),
            WatchSpec("JobSet", MANAGED_SELECTOR),
            WatchSpec("ResourceFlavor"),
            WatchSpec("TrainingRuntime"),
            WatchSpec("ClusterTrainingRuntime"),
        ]

    async def start(self, ctx: LaunchContext) -> float | None:
        jobset = owned_jobset(ctx)
        if jobset is not None and (jobset.get("metadata") or {}).get("deletionTimestamp"):
            return JOBSET_GONE_RECHECK  # the previous run's JobSet is still being deleted
        if jobset is None:
            await self._create(ctx)
        resumed = ctx.trainjob_copy()
        resumed.setdefault("spec", {})["suspend"] = False
        if await ctx.writes.replace("TrainJob", resumed) is None:
            log.info("launcher: TrainJob %s changed under the start; the next event starts it again", ctx.key)
        return None

    async def stop(self, ctx: LaunchContext) -> float | None:
        self._created.pop(ctx.key, None)
        suspended = ctx.trainjob_copy()
        suspended.setdefault("spec", {})["suspend"] = True
        if await ctx.writes.replace("TrainJob", suspended) is None:
            return None
        log.info("launcher: stopped TrainJob %s (its Workload is not admitted)", ctx.key)
        await self._delete_jobset(ctx)
        return None

    async def sync(self, ctx: LaunchContext) -> float | None:
        jobset = owned_jobset(ctx)
        if jobset is not None:
            self._created.pop(ctx.key, None)
        elif self._awaiting(ctx.key):
            return JOBSET_GONE_RECHECK  # its watch event wakes this key sooner
        finished = ctx.trainjob.finished
        if not finished and ctx.suspended and jobset is not None and not ctx.admitted:
            # A stop that suspended the TrainJob but did not get to the JobSet.
            await self._delete_jobset(ctx)
            jobset = None
        elif not finished and not ctx.suspended and ctx.admitted and jobset is None:
            # Running and admitted, but the JobSet is gone (deleted by hand, or the old one just left).
            await self._create(ctx)
            return None
        desired = trainjob_status(ctx.trainjob.document, jobset, now=ctx.now)
        if status_differs(ctx.trainjob.status, desired):
            await ctx.writes.patch_status("TrainJob", ctx.trainjob.document, desired)
        return None

    def _awaiting(self, key: str) -> bool:
        """A JobSet created for ``key`` moments ago that the cache does not show yet."""
        created = self._created.get(key)
        if created is None:
            return False
        if time.monotonic() - created < JOBSET_EXPECTED_FOR:
            return True
        del self._created[key]
        return False

    async def _create(self, ctx: LaunchContext) -> None:
        for document in launch_objects(ctx):
            created = await ctx.writes.create(document)
            if created:
                log.info("launcher: created %s %s/%s", document["kind"], ctx.namespace, document["metadata"]["name"])
        now = time.monotonic()
        if len(self._created) >= _EXPECTATIONS_KEPT:
            # keys of TrainJobs deleted before their JobSet showed are never synced again
            self._created = {key: at for key, at in self._created.items() if now - at < JOBSET_EXPECTED_FOR}
        self._created[ctx.key] = now

    @staticmethod
    async def _delete_jobset(ctx: LaunchContext) -> None:
        jobset = owned_jobset(ctx)
        if jobset is None or (jobset.get("metadata") or {}).get("deletionTimestamp"):
            return
        log.info("launcher: deleting JobSet %s (resourceVersion %s)", ctx.key, resource_version(jobset))
        await ctx.writes.delete("JobSet", ctx.name, ctx.namespace)
