"""The ``trainer`` launcher mode: beside Kubeflow Trainer's controller, as Kueue's TrainJob integration.

Trainer's controller renders the TrainJob into a JobSet and mirrors its status; trainyard only
says where and how the pods run. On start it writes one ``spec.runtimePatches`` entry under its
own manager (``trainyard.io/scheduler``): per replicated job the pod-set info of the admission
(flavor ``nodeSelector`` and ``tolerations``, the topology scheduling gate, the pod-set label and
workload annotation), and sets ``spec.suspend: false`` in the same update. Trainer's webhook
allows patch changes when the TrainJob is suspended before or after the update, so this single
write is valid, and Trainer renders the patched template once it sees the job resumed.

On eviction it suspends the TrainJob and removes its patch in the same update when no replicated
job is active; otherwise (Trainer's webhook refuses patch changes while a replicated job is still
active, as Kueue's ``Stop`` knows) it suspends first and removes the patch once ``jobsStatus``
shows nothing active. One write per start, one or two per stop.
"""

from __future__ import annotations

import logging
from typing import Any

from runtimes.api.trainer import CLUSTER_TRAINING_RUNTIME_KIND
from scheduler.controllers.constants import MANAGED_LABEL, MANAGED_VALUE, RUNTIME_PATCH_MANAGER
from scheduler.controllers.launcher.pod_sets import pod_set_infos, pod_template_patch
from scheduler.controllers.launcher.reconciler import LaunchContext, LauncherMode
from scheduler.controllers.manager import WatchSpec
from scheduler.controllers.views import TrainJobView

log = logging.getLogger(__name__)


def replicated_job_names(ctx: LaunchContext) -> dict[str, str]:
    """Pod-set name (lower-cased) -> the runtime's replicated job name, when the runtime is cached."""
    ref = ctx.model.spec.runtime_ref
    if ref.effective_kind == CLUSTER_TRAINING_RUNTIME_KIND:
        runtime = ctx.cache.get(CLUSTER_TRAINING_RUNTIME_KIND, ref.name)
    else:
        runtime = ctx.cache.get("TrainingRuntime", ref.name, ctx.namespace)
    template = ((runtime or {}).get("spec") or {}).get("template") or {}
    jobs = (template.get("spec") or {}).get("replicatedJobs") or ()
    return {str(job.get("name", "")).lower(): str(job.get("name", "")) for job in jobs}


def scheduler_patch(ctx: LaunchContext) -> dict[str, Any]:
    """trainyard's ``runtimePatches`` entry for the committed admission of ``ctx.workload``."""
    assert ctx.workload is not None
    infos = pod_set_infos(ctx.workload, ctx.cache)
    names = replicated_job_names(ctx)
    replicated_jobs = [
        {"name": names.get(name, name), "template": {"spec": {"template": pod_template_patch(info)}}}
        for name, info in sorted(infos.items())
    ]
    return {
        "manager": RUNTIME_PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "metadata": {"labels": {MANAGED_LABEL: MANAGED_VALUE}},
                "spec": {"replicatedJobs": replicated_jobs},
            }
        },
    }


def _patches(document: dict[str, Any]) -> list[dict[str, Any]]:
    return list((document.get("spec") or {}).get("runtimePatches") or [])


def has_own_patch(document: dict[str, Any]) -> bool:
    return any(patch.get("manager") == RUNTIME_PATCH_MANAGER for patch in _patches(document))


def without_own_patch(patches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [patch for patch in patches if patch.get("manager") != RUNTIME_PATCH_MANAGER]


def jobs_active(trainjob: TrainJobView) -> bool:
    """A replicated job still has active Jobs (Trainer's ``jobsStatus``)."""
    return any(int(job.get("active") or 0) > 0 for job in trainjob.status.get("jobsStatus") or ())


def _set_patches(document: dict[str, Any], patches: list[dict[str, Any]]) -> None:
    spec = document.setdefault("spec", {})
    if patches:
        spec["runtimePatches"] = patches
    else:
        spec.pop("runtimePatches", None)


class TrainerPatchLauncher:
    mode: LauncherMode = "trainer"

    def watches(self) -> list[WatchSpec]:
        return [
            WatchSpec("TrainJob"),
            WatchSpec("Workload"),
            WatchSpec("ResourceFlavor"),
            WatchSpec("TrainingRuntime"),
            WatchSpec("ClusterTrainingRuntime"),
        ]

    async def start(self, ctx: LaunchContext) -> float | None:
        resumed = ctx.trainjob_copy()
        patches = without_own_patch(_patches(resumed))
        # Kueue appends its entry; patches apply in list order, so the scheduler's comes last.
        patches.append(scheduler_patch(ctx))
        _set_patches(resumed, patches)
        resumed["spec"]["suspend"] = False
        if await ctx.writes.replace("TrainJob", resumed) is not None:
            log.info("launcher: resumed TrainJob %s with its placement patch", ctx.key)
        return None

    async def stop(self, ctx: LaunchContext) -> float | None:
        suspended = ctx.trainjob_copy()
        suspended.setdefault("spec", {})["suspend"] = True
        if not jobs_active(ctx.trainjob):
            _set_patches(suspended, without_own_patch(_patches(suspended)))
        if await ctx.writes.replace("TrainJob", suspended) is not None:
            log.info("launcher: suspended TrainJob %s (its Workload is not admitted)", ctx.key)
        return None

    async def sync(self, ctx: LaunchContext) -> float | None:
        # Trainer mirrors the JobSet into the status; what is left is a patch a stop had to keep.
        if (
            ctx.suspended
            and not ctx.admitted
            and has_own_patch(ctx.trainjob.document)
            and not jobs_active(ctx.trainjob)
        ):
            cleared = ctx.trainjob_copy()
            _set_patches(cleared, without_own_patch(_patches(cleared)))
            await ctx.writes.replace("TrainJob", cleared)
        return None
