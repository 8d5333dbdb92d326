"""An admission whose write is in flight while the next cycle takes it back (a preemption, a
finish) still finishes its bookkeeping: the queue controller read the admission before the write."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from prometheus_client import CollectorRegistry

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.queueing import queue_controller as module
from scheduler.controllers.queueing.metrics import QueueMetrics
from scheduler.controllers.queueing.queue_controller import QueueController
from scheduler.engine import WorkloadState


async def test_an_admission_taken_back_while_its_write_is_in_flight_is_still_counted(monkeypatch: Any) -> None:
    registry = CollectorRegistry()
    controller = QueueController(None, ClusterCache(), metrics=QueueMetrics(registry))  # type: ignore[arg-type]
    info = SimpleNamespace(
        admission=SimpleNamespace(cluster_queue="cq"), state=WorkloadState.ADMITTED, queue_order_time=10.0, created=10.0
    )
    server_copy = SimpleNamespace(admission=None, document={"metadata": {"name": "w", "namespace": "ns"}})
    # the engine is compiled (no attributes set on it): the controller reads this one instead
    monkeypatch.setattr(QueueController, "engine", property(lambda self: SimpleNamespace(workload=lambda key: info)))
    monkeypatch.setattr(controller, "_workload", lambda key: server_copy)
    monkeypatch.setattr(module, "admitted_patch", lambda document, admission, now: {"admission": admission})

    async def write(key: str, document: dict[str, Any], patch: dict[str, Any]) -> bool:
        info.admission = None  # the next cycle preempted it while this write was on the wire
        return True

    monkeypatch.setattr(controller.writer, "write", write)
    assert await controller._admit("ns/w", now=12.0) is True
    assert registry.get_sample_value("kueue_admission_wait_time_seconds_count", {"cluster_queue": "cq"}) == 1.0
