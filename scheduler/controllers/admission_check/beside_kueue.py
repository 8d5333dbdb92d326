"""Wiring beside Kueue: the topology check, its Active condition, the launcher and the ungater.

What ``trainyard serve --mode admission-check`` runs instead of the standalone service: no queue
controller and no TrainJob → Workload reconciler (Kueue creates and admits Workloads), but
``TopologyCheckController`` (placements, answered on Kueue's Workloads), ``CheckActivityController``
(the checks' ``Active`` condition), the ``jobset`` launcher that leaves ``spec.suspend`` to
Kueue and the pod ungater, on one cache and one leader election::

    service = build_beside_kueue_service(client, leader_elect=True)
    await service.manager.run()
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.controllers.admission_check.activity import CheckActivityController
from scheduler.controllers.admission_check.kueue_started_launcher import KueueStartedJobSetLauncher
from scheduler.controllers.admission_check.topology_check import INPUT_KINDS, TopologyCheckController
from scheduler.controllers.events import EventRecorder
from scheduler.controllers.launcher.wiring import (
    LauncherControllers,
    build_launcher_controllers,
    launcher_watches,
)
from scheduler.controllers.leadership import leader_elector
from scheduler.controllers.manager import ControllerManager, WatchSpec, merge_watches
from scheduler.controllers.requests import CheckRequest
from scheduler.controllers.runtime import DEFAULT_WORKERS, Controller
from scheduler.controllers.workqueue import WorkQueue
from scheduler.engine import TOPOLOGY_CHECK_CONTROLLER, EngineConfig
from scheduler.kube import InformerSettings, KubeClient, LeaderElector, LeaseSettings

CHECK_WATCHES = [WatchSpec("Workload"), *(WatchSpec(kind) for kind in INPUT_KINDS)]


@dataclass
class BesideKueueService:
    manager: ControllerManager
    check: TopologyCheckController
    activity: CheckActivityController
    launcher: LauncherControllers
    leader: LeaderElector | None


@dataclass(frozen=True)
class CheckSettings:
    """The check's knobs: its controllerName and the Retry delay (base doubling per retry, capped)."""

    controller_name: str = TOPOLOGY_CHECK_CONTROLLER
    retry_base_seconds: float = 10.0
    retry_max_seconds: float = 300.0


def build_beside_kueue_service(
    client: KubeClient,
    *,
    leader_elect: bool = True,
    lease_namespace: str | None = None,
    identity: str | None = None,
    config: EngineConfig | None = None,
    settings: CheckSettings | None = None,
    lease_settings: LeaseSettings | None = None,
    informer_settings: InformerSettings | None = None,
    workers: int = DEFAULT_WORKERS,
    clock: Callable[[], float] = time.time,
) -> BesideKueueService:
    settings = settings or CheckSettings()
    leader = leader_elector(
        client, leader_elect=leader_elect, lease_namespace=lease_namespace, identity=identity, settings=lease_settings
    )
    watches = merge_watches(CHECK_WATCHES, launcher_watches("jobset"))
    manager = ControllerManager(client, watches, leader=leader, informer_settings=informer_settings)
    check = TopologyCheckController(
        client,
        manager.cache,
        config=config,
        controller_name=settings.controller_name,
        events=EventRecorder(client, clock=clock),
        clock=clock,
        retry_base=settings.retry_base_seconds,
        retry_max=settings.retry_max_seconds,
    )
    # a placement is decided and reserved without yielding, so workers never place on the same nodes
    queue = WorkQueue[CheckRequest](name=check.name, base_delay=0.05, max_delay=10.0)
    check_controller = Controller(check, workers=workers, queue=queue)
    check.bind(check_controller.queue.add)
    activity = CheckActivityController(client, manager.cache, controller_name=settings.controller_name, clock=clock)
    launcher = build_launcher_controllers(
        "jobset", client, manager.cache, workers=workers, launcher=KueueStartedJobSetLauncher()
    )
    manager.add(check_controller, enqueue=check.enqueue_map())
    manager.add(Controller(activity, workers=1), enqueue=activity.enqueue_map())
    for controller, enqueue in launcher.registrations:
        manager.add(controller, enqueue=enqueue)
    return BesideKueueService(manager, check, activity, launcher, leader)
