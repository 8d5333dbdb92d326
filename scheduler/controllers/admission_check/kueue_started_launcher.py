"""The ``jobset`` launcher beside Kueue: Kueue starts and stops the TrainJob, trainyard builds its JobSet.

With trainyard as Kueue's topology admission check, Kueue's TrainJob integration owns
``spec.suspend``: it unsuspends an admitted TrainJob (after writing the admission's pod-set info,
the check's ``podSetUpdates`` included, as its ``kueue.x-k8s.io/manager`` runtimePatch) and
suspends an evicted one. Trainer's controller is not installed, so trainyard's ``jobset`` launcher
still renders the JobSet, mirrors its status into the TrainJob and deletes it after a stop; it
only never writes ``spec.suspend`` itself. Both of the launcher's transitions become its sync: a
running, admitted TrainJob without a JobSet gets one, a suspended one that is not admitted loses
it (``JobSetLauncher.sync``).
"""

from __future__ import annotations

from scheduler.controllers.launcher.jobset import JobSetLauncher
from scheduler.controllers.launcher.reconciler import LaunchContext


class KueueStartedJobSetLauncher(JobSetLauncher):
    async def start(self, ctx: LaunchContext) -> float | None:
        # admitted but still suspended: Kueue's job reconciler unsuspends it
        return await self.sync(ctx)

    async def stop(self, ctx: LaunchContext) -> float | None:
        # running but no longer admitted: Kueue's job reconciler suspends it; the JobSet goes then
        return await self.sync(ctx)
