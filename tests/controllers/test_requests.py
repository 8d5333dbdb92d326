"""Typed reconcile requests: the work queue dedups them as it dedups string keys, and the
mappers turn Node and Pod changes into the requests the queue controller and the topology check take."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.controllers.node_readiness import node_request_for_change
from scheduler.controllers.queueing.health import pods_request_for_change
from scheduler.controllers.requests import (
    CYCLE,
    RESYNC,
    CycleRequest,
    NodeRequest,
    QueueRequest,
    ResyncRequest,
    WorkloadPodsRequest,
    WorkloadRequest,
)
from scheduler.controllers.workqueue import WorkQueue


async def test_the_same_request_queued_twice_while_waiting_runs_once() -> None:
    queue: WorkQueue[QueueRequest] = WorkQueue()
    for request in [
        CYCLE,
        NodeRequest("n1"),
        CycleRequest(),
        NodeRequest("n1"),
        WorkloadPodsRequest(WorkloadRequest("team-a", "job-1")),
        RESYNC,
        ResyncRequest(),
        NodeRequest("n2"),
        WorkloadPodsRequest(WorkloadRequest("team-a", "job-1")),
    ]:
        queue.add(request)
    expected = [
        CYCLE,
        NodeRequest("n1"),
        WorkloadPodsRequest(WorkloadRequest("team-a", "job-1")),
        RESYNC,
        NodeRequest("n2"),
    ]
    assert len(queue) == len(expected)
    assert [await queue.get() for _ in expected] == expected


async def test_a_request_added_while_processed_comes_back_once_after_done() -> None:
    queue: WorkQueue[QueueRequest] = WorkQueue()
    queue.add(CYCLE)
    assert await queue.get() == CYCLE
    queue.add(CycleRequest())
    queue.add(CYCLE)
    assert len(queue) == 0  # never handed to a second worker while the first holds it
    queue.done(CYCLE)
    assert len(queue) == 1
    assert await queue.get() == CYCLE


def test_requests_about_different_things_never_collide() -> None:
    requests: list[object] = [
        NodeRequest("team-a"),
        WorkloadRequest("team-a", "job-1"),
        WorkloadPodsRequest(WorkloadRequest("team-a", "job-1")),
        WorkloadRequest("team-a", "job-2"),
        CYCLE,
        RESYNC,
    ]
    assert len(set(requests)) == len(requests)
    assert WorkloadRequest("team-a", "job-1") == WorkloadRequest.parse("team-a/job-1")
    assert WorkloadRequest.of({"metadata": {"namespace": "team-a", "name": "job-1"}}).key == "team-a/job-1"
    assert WorkloadRequest.of({"metadata": {"name": "job-1"}}).key == "default/job-1"


def node(name: str, ready: bool) -> dict[str, Any]:
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"conditions": [condition]}}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(node("n1", True), node("n1", False), [NodeRequest("n1")], id="ready-to-notready"),
        pytest.param(node("n1", True), None, [NodeRequest("n1")], id="deleted"),
        pytest.param(node("n1", True), node("n1", True), [], id="still-ready"),
        pytest.param(node("n1", False), node("n1", False), [], id="already-notready"),
        pytest.param(None, node("n1", False), [], id="new-node"),
    ],
)
def test_a_node_that_fails_asks_for_a_node_request(
    old: dict[str, Any] | None, new: dict[str, Any] | None, expected: list[NodeRequest]
) -> None:
    assert node_request_for_change(old, new) == expected


def test_a_gang_pod_asks_for_its_workloads_pods_request() -> None:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p0", "namespace": "team-a", "annotations": {"kueue.x-k8s.io/workload": "job-1"}},
    }
    assert pods_request_for_change(None, pod) == [WorkloadPodsRequest(WorkloadRequest("team-a", "job-1"))]
    assert pods_request_for_change(pod, None) == [WorkloadPodsRequest(WorkloadRequest("team-a", "job-1"))]
    assert pods_request_for_change(None, {"kind": "Pod", "metadata": {"name": "p1", "namespace": "team-a"}}) == []
