"""Wiring: the launcher of a mode and the pod ungater as controllers, with their enqueue mappers.

What ``trainyard serve --launcher jobset|trainer`` adds to its ``ControllerManager``::

    manager = ControllerManager(client, [*queue_watches, *launcher_watches(mode)], leader=...)
    for controller, enqueue in build_launcher_controllers(mode, client, manager.cache).registrations:
        manager.add(controller, enqueue=enqueue)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.launcher.jobset import JobSetLauncher
from scheduler.controllers.launcher.reconciler import (
    LAUNCHER_MODES,
    JobLauncher,
    LauncherMode,
    LauncherReconciler,
    owner_trainjob_keys,
    trainjob_key,
)
from scheduler.controllers.launcher.trainer import TrainerPatchLauncher
from scheduler.controllers.manager import KeyMapper, WatchSpec
from scheduler.controllers.runtime import DEFAULT_WORKERS, Controller
from scheduler.controllers.ungater import UNGATER_WATCHES, PodUngater, gated_pod_key, gated_pod_keys_of_workload
from scheduler.controllers.writes import ObjectWrites
from scheduler.kube import KubeClient


def _make_launcher(mode: LauncherMode) -> JobLauncher:
    if mode == "jobset":
        return JobSetLauncher()
    if mode == "trainer":
        return TrainerPatchLauncher()
    raise ValueError(f"unknown launcher mode {mode!r}; use one of: {', '.join(LAUNCHER_MODES)}")


def launcher_watches(mode: LauncherMode) -> list[WatchSpec]:
    """The kinds (and selectors) the manager must watch for the launcher and ungater of ``mode``."""
    specs = {spec.kind: spec for spec in [*_make_launcher(mode).watches(), *UNGATER_WATCHES]}
    return list(specs.values())


@dataclass
class LauncherControllers:
    """The launcher's and the ungater's controllers, with the enqueue mappers the manager needs."""

    mode: LauncherMode
    writes: ObjectWrites
    registrations: list[tuple[Controller[str], dict[str, KeyMapper[str]]]]

    @property
    def controllers(self) -> list[Controller[Any]]:
        return [controller for controller, _ in self.registrations]


def build_launcher_controllers(
    mode: LauncherMode,
    client: KubeClient,
    cache: ClusterCache,
    *,
    workers: int = DEFAULT_WORKERS,
    launcher: JobLauncher | None = None,
) -> LauncherControllers:
    """The launcher of ``mode`` and the pod ungater, ready for ``ControllerManager.add``::

        built = build_launcher_controllers(mode, client, manager.cache)
        for controller, enqueue in built.registrations:
            manager.add(controller, enqueue=enqueue)

    The manager must watch ``launcher_watches(mode)``. ``launcher``: a launcher of ``mode`` other
    than the mode's own (beside Kueue, one that leaves ``spec.suspend`` to Kueue).
    """
    launcher = launcher if launcher is not None else _make_launcher(mode)
    writes = ObjectWrites(client)
    launch = Controller(LauncherReconciler(launcher, cache, writes), workers=workers)
    enqueue: dict[str, KeyMapper[str]] = {"TrainJob": trainjob_key, "Workload": owner_trainjob_keys}
    if any(spec.kind == "JobSet" for spec in launcher.watches()):
        enqueue["JobSet"] = owner_trainjob_keys
    ungate = Controller(PodUngater(cache, writes), workers=workers)

    def workload_pods(old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[str]:
        return gated_pod_keys_of_workload(cache, old, new)

    return LauncherControllers(
        mode,
        writes,
        [(launch, enqueue), (ungate, {"Pod": gated_pod_key, "Workload": workload_pods})],
    )
