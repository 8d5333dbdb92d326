"""The preemption oracle's answers kept within a cycle (``AdmissionCycle._probe``) equal the
oracle's own, before and after an admission changes the quota tree."""

from __future__ import annotations

from builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue

from scheduler.engine import AdmissionEngine, EngineConfig
from scheduler.engine.cycle import AdmissionCycle
from scheduler.engine.results import CycleResult

NAMESPACE = "team"


def _engine() -> AdmissionEngine:
    """``b`` borrows 3 of ``a``'s 5 CPU; ``a`` may reclaim them."""
    engine = AdmissionEngine(EngineConfig())
    engine.apply(flavor("one"))
    for name in ("a", "b"):
        builder = ClusterQueueBuilder(name).cohort("shared").quota("one", "cpu", 5)
        engine.apply(builder.preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any").obj())
        engine.apply(local_queue(f"lq-{name}", NAMESPACE, name))
    engine.submit(WorkloadBuilder("big", NAMESPACE).queue("lq-b").pod_set(count=1, cpu="8").obj(), now=0)
    assert [a.key for a in engine.schedule(1).admitted] == [f"{NAMESPACE}/big"]
    for k, cpu in enumerate(("1", "3", "4", "6")):
        engine.submit(WorkloadBuilder(f"w{k}", NAMESPACE).queue("lq-a").pod_set(count=1, cpu=cpu).obj(), now=2 + k)
    return engine


def test_kept_answers_equal_the_oracle_until_and_after_a_change() -> None:
    engine = _engine()
    cycle = AdmissionCycle(engine, 10, CycleResult())
    cq = engine.model.cluster_queues["a"]
    pending = [engine.workload(f"{NAMESPACE}/w{k}") for k in range(4)]
    asks = [(w, ("one", "cpu"), amount) for w in pending if w is not None for amount in (1000, 3000, 4000, 6000)]
    for _ in range(2):  # the second pass is answered from what the first kept
        for workload, fr, amount in asks:
            assert cycle._probe(cq, workload, fr, amount) == cycle._oracle(cq, workload, fr, amount)
    assert cycle._probes
    first = pending[0]
    assert first is not None
    cycle._admit(cq, first, cycle.assign(cq, first), {})  # a change: the kept answers no longer hold
    for workload, fr, amount in asks[4:]:
        assert cycle._probe(cq, workload, fr, amount) == cycle._oracle(cq, workload, fr, amount)
