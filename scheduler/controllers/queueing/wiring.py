"""Wiring: the queue controller and the TrainJob → Workload reconciler, with their watches.

What ``trainyard serve`` adds to its ``ControllerManager``::

    manager = ControllerManager(client, merge_watches(QUEUE_WATCHES, ...), leader=...)
    for controller, enqueue in build_queue_controllers(client, manager.cache, ...).registrations:
        manager.add(controller, enqueue=enqueue)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.constants import MANAGED_SELECTOR
from scheduler.controllers.events import EventRecorder
from scheduler.controllers.manager import KeyMapper, WatchSpec
from scheduler.controllers.queueing.metrics import QueueMetrics
from scheduler.controllers.queueing.queue_controller import QueueController
from scheduler.controllers.queueing.queue_status import QueueStatusController
from scheduler.controllers.queueing.trainjob_workloads import TrainJobWorkloads
from scheduler.controllers.requests import QueueRequest
from scheduler.controllers.runtime import DEFAULT_WORKERS, Controller
from scheduler.controllers.workqueue import WorkQueue
from scheduler.engine import EngineConfig
from scheduler.kube import KubeClient

QUEUE_WATCHES = [
    WatchSpec("TrainJob"),
    WatchSpec("TrainingRuntime"),
    WatchSpec("ClusterTrainingRuntime"),
    WatchSpec("Workload"),
    WatchSpec("ResourceFlavor"),
    WatchSpec("ClusterQueue"),
    WatchSpec("LocalQueue"),
    WatchSpec("Cohort"),
    WatchSpec("WorkloadPriorityClass"),
    WatchSpec("Topology"),
    WatchSpec("Node"),
    WatchSpec("Namespace"),
    WatchSpec("Pod", MANAGED_SELECTOR),
]


@dataclass
class QueueControllers:
    queue: QueueController
    trainjobs: TrainJobWorkloads
    metrics: QueueMetrics
    registrations: list[tuple[Controller[Any], dict[str, KeyMapper[Any]]]]
    queue_status: QueueStatusController


def build_queue_controllers(
    client: KubeClient,
    cache: ClusterCache,
    *,
    config: EngineConfig | None = None,
    registry: CollectorRegistry | None = None,
    events: bool = True,
    clock: Callable[[], float] = time.time,
    workers: int = DEFAULT_WORKERS,
    # Kueue's scheduler starts its next cycle as soon as a head is waiting; at 0.05 s a TrainJob
    # waited about 70 ms from its Workload's creation to its admission on a real kube-apiserver
    # (bench controller --real), 50 of them the debounce. A burst still shares cycles: after one,
    # the next comes no sooner than the queue controller's ``min_interval``.
    debounce: float = 0.005,
) -> QueueControllers:
    recorder = EventRecorder(client, clock=clock) if events else None
    metrics = QueueMetrics(registry)
    queue = QueueController(
        client, cache, config=config, metrics=metrics, events=recorder, clock=clock, debounce=debounce
    )
    queue_controller = Controller(
        queue, workers=workers, queue=WorkQueue[QueueRequest](name=queue.name, base_delay=0.05, max_delay=10.0)
    )
    queue.bind(queue_controller.queue.add_after)
    trainjobs = TrainJobWorkloads(client, cache, events=recorder, clock=clock)
    trainjob_controller = Controller(trainjobs, workers=workers)
    # ClusterQueue and LocalQueue status from the queue controller's engine, read after its cycles
    queue_status = QueueStatusController(
        client,
        cache,
        lambda: queue.engine if queue.mirror.live else None,
        cycle_due=lambda: queue.cycle_due,
        clock=clock,
    )
    status_controller = Controller(queue_status, workers=1)
    queue_status.bind(status_controller.queue.add)
    queue.cycle_listeners.append(queue_status.cycle_ran)
    return QueueControllers(
        queue,
        trainjobs,
        metrics,
        [
            (queue_controller, dict(queue.enqueue_map())),
            (trainjob_controller, dict(trainjobs.enqueue_map())),
            (status_controller, dict(queue_status.enqueue_map())),
        ],
        queue_status,
    )
