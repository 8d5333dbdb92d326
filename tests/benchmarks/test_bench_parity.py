"""`bench parity`'s engine side and its comparison, without a cluster (the real tier runs Kueue)."""

from __future__ import annotations

from typing import Any

from scheduler.api.kueue import Workload
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue
from trainyard.benchmarks.parity import _in_queue_order, compare
from trainyard.benchmarks.parity_sides import Decision, EngineSide, SideRecord

NS = "team"


def _objects() -> list[Any]:
    return [
        flavor("default"),
        ClusterQueueBuilder("cq")
        .quota("default", "cpu", 4)
        .spec(preemption={"withinClusterQueue": "LowerPriority"})
        .obj(),
        local_queue("lq", NS, "cq"),
    ]


def _workload(name: str, cpu: int, priority: int) -> dict[str, Any]:
    job = WorkloadBuilder(name, NS).queue("lq").priority(priority).pod_set(cpu=str(cpu))
    document = job.doc()
    document["metadata"]["creationTimestamp"] = "2026-11-28T00:00:00Z"
    return document


def test_a_steps_arrivals_go_in_priority_order_and_the_engine_takes_them_at_once() -> None:
    """Created in one second, Kueue takes the higher priority first; so does the engine, given the
    step at once: the low job waits instead of being admitted and then preempted."""
    ordered = _in_queue_order([_workload("low", 4, 10), _workload("high", 4, 1000)])
    assert [d["metadata"]["name"] for d in ordered] == ["high", "low"]
    side = EngineSide(_objects(), fair_sharing=False)
    side.run_step(0, 0.0, [], [Workload.model_validate(d) for d in ordered])
    assert side.record.admission_order == [f"{NS}/high"]
    assert f"{NS}/low" in side.record.waiting
    side.run_step(1, 1.0, [f"{NS}/high"], [])
    assert side.record.admission_order == [f"{NS}/high", f"{NS}/low"]
    assert side.record.admitted_step[f"{NS}/low"] == 1


def test_the_comparison_counts_decisions_and_steps_apart() -> None:
    kueue, engine = SideRecord(), SideRecord()
    kueue.add("a", Decision(0, "admitted", "cq", (("cpu", "default"),)))
    engine.add("a", Decision(0, "admitted", "cq", (("cpu", "default"),)))
    kueue.add("b", Decision(2, "admitted", "cq", (("cpu", "default"),)))
    engine.add("b", Decision(1, "admitted", "cq", (("cpu", "default"),)))
    kueue.add("c", Decision(1, "admitted", "cq", (("cpu", "default"),)))
    engine.waiting["c"] = "insufficient unused quota for cpu in flavor default, 1 more needed"
    result = compare(["a", "b", "c"], kueue, engine)
    assert result["decisions_equal_pct"] == 66.67  # c: admitted by Kueue only
    assert result["order_equal_pct"] == 33.33  # b one step apart, c never admitted here
    [c] = [d for d in result["differences"] if d["workload"] == "c"]
    assert c["trainyard"]["waiting"].startswith("insufficient unused quota")
