"""The controller service: every controller of trainyard in one ``ControllerManager``.

``build_controller_service`` wires the queue controller (TrainJob → Workload, admission), the
launcher of the chosen mode and the pod ungater on one cache, one set of informers and one
leader election, as ``trainyard serve`` runs them. Beside Kueue (``--mode admission-check``)
``admission_check.beside_kueue`` wires the topology check in the queue controller's place, on the
same ``leader_elector``.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from scheduler.controllers.launcher.reconciler import LauncherMode
from scheduler.controllers.launcher.wiring import (
    LauncherControllers,
    build_launcher_controllers,
    launcher_watches,
)
from scheduler.controllers.leadership import leader_elector
from scheduler.controllers.manager import ControllerManager, merge_watches
from scheduler.controllers.queueing.wiring import (
    QUEUE_WATCHES,
    QueueControllers,
    build_queue_controllers,
)
from scheduler.controllers.runtime import DEFAULT_WORKERS
from scheduler.engine import EngineConfig
from scheduler.kube import InformerSettings, KubeClient, LeaderElector, LeaseSettings


@dataclass
class ControllerService:
    manager: ControllerManager
    queue: QueueControllers
    launcher: LauncherControllers
    leader: LeaderElector | None


def build_controller_service(
    client: KubeClient,
    *,
    launcher_mode: LauncherMode = "jobset",
    leader_elect: bool = True,
    lease_namespace: str | None = None,
    identity: str | None = None,
    config: EngineConfig | None = None,
    registry: CollectorRegistry | None = None,
    lease_settings: LeaseSettings | None = None,
    informer_settings: InformerSettings | None = None,
    workers: int = DEFAULT_WORKERS,
) -> ControllerService:
    leader = leader_elector(
        client, leader_elect=leader_elect, lease_namespace=lease_namespace, identity=identity, settings=lease_settings
    )
    watches = merge_watches(QUEUE_WATCHES, launcher_watches(launcher_mode))
    manager = ControllerManager(client, watches, leader=leader, informer_settings=informer_settings)
    queue = build_queue_controllers(client, manager.cache, config=config, registry=registry, workers=workers)
    launcher = build_launcher_controllers(launcher_mode, client, manager.cache, workers=workers)
    for controller, enqueue in [*queue.registrations, *launcher.registrations]:
        manager.add(controller, enqueue=enqueue)
    return ControllerService(manager, queue, launcher, leader)
