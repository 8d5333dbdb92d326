"""Kueue's preemption test cases (pkg/scheduler/preemption/*_test.go) in the engine's terms.

A case is what Kueue's tables hold: ClusterQueues and Cohorts, the workloads already admitted
(all admitted at the same instant, ties broken by UID = name, as Kueue's fair-sharing tests set
it), one incoming workload and the ClusterQueue it goes to; the answer is the victims with their
reasons. The incoming workload's flavor assignment is given, as Kueue's tests give it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from builders import ClusterQueueBuilder, CohortBuilder, WorkloadBuilder, flavor, local_queue

from scheduler.engine import AdmissionEngine, EngineConfig
from scheduler.engine.preemption import find_victims

NAMESPACE = "default"


@dataclass(frozen=True)
class Running:
    """An admitted workload: one pod with these requests, its quota in ``flavor``."""

    name: str
    cluster_queue: str
    priority: int = 0
    cpu: str = "1"
    memory: str | None = None
    flavor: str = "default"

    def builder(self) -> WorkloadBuilder:
        requests = {"cpu": self.cpu} | ({"memory": self.memory} if self.memory is not None else {})
        resources = dict.fromkeys(requests, self.flavor)
        return (
            WorkloadBuilder(self.name, NAMESPACE)
            .queue(f"lq-{self.cluster_queue}")
            .priority(self.priority)
            .pod_set(count=1, **requests)
            .admitted(self.cluster_queue, resources)
        )


@dataclass(frozen=True)
class Incoming:
    cluster_queue: str
    priority: int = 0
    cpu: str = "1"
    memory: str | None = None
    flavor: str = "default"


@dataclass(frozen=True)
class PreemptionCase:
    queues: list[ClusterQueueBuilder]
    running: list[Running]
    incoming: Incoming
    want: dict[str, str]  # victim -> reason
    cohorts: list[CohortBuilder] = field(default_factory=list)
    flavors: tuple[str, ...] = ("default",)


def queue(
    name: str,
    cohort: str | None,
    cpu: int | str | dict[str, int] = 0,
    *,
    cpu_borrowing_limit: int | str | None = None,
    cpu_lending_limit: int | str | None = None,
    memory: str | None = None,
    memory_borrowing_limit: str | None = None,
    within: str = "Never",
    reclaim: str = "Never",
    borrow_within: str | None = None,
    threshold: int | None = None,
    weight: str | None = None,
    flavor_name: str = "default",
) -> ClusterQueueBuilder:
    """A ClusterQueue as Kueue's tests write one: cpu (and memory) quota in one flavor, or cpu
    in several (``cpu`` maps flavor to nominal quota), and a preemption policy."""
    builder = ClusterQueueBuilder(name)
    for flavor_, nominal in (cpu if isinstance(cpu, dict) else {flavor_name: cpu}).items():
        builder.quota(flavor_, "cpu", nominal, borrowing_limit=cpu_borrowing_limit, lending_limit=cpu_lending_limit)
    if memory is not None:
        builder.quota(flavor_name, "memory", memory, borrowing_limit=memory_borrowing_limit)
    if cohort is not None:
        builder.cohort(cohort)
    builder.preemption(
        within_cluster_queue=within,
        reclaim_within_cohort=reclaim,
        borrow_within_cohort=borrow_within,
        max_priority_threshold=threshold,
    )
    if weight is not None:
        builder.fair_weight(weight)
    return builder


def cohort(name: str, parent: str | None = None, cpu: int | None = None, *, weight: str | None = None) -> CohortBuilder:
    builder = CohortBuilder(name)
    if parent is not None:
        builder.parent(parent)
    if cpu is not None:
        builder.quota("default", "cpu", cpu)
    if weight is not None:
        builder.spec(fairSharing={"weight": weight})
    return builder


def engine_for(case: PreemptionCase, *, fair_sharing: bool) -> AdmissionEngine:
    engine = AdmissionEngine(EngineConfig(fair_sharing=fair_sharing))
    for name in case.flavors:
        engine.apply(flavor(name))
    for cohort_builder in case.cohorts:
        engine.apply(cohort_builder.obj())
    for queue_builder in case.queues:
        engine.apply(queue_builder.obj())
        engine.apply(local_queue(f"lq-{queue_builder.name}", NAMESPACE, queue_builder.name))
    for running in case.running:
        engine.submit(running.builder().obj(), now=0)
    return engine


def victims(case: PreemptionCase, *, fair_sharing: bool = False) -> dict[str, str]:
    """Who the engine evicts for ``case.incoming`` (Kueue's GetTargets), name -> reason."""
    engine = engine_for(case, fair_sharing=fair_sharing)
    incoming = case.incoming
    requests = {"cpu": incoming.cpu} | ({"memory": incoming.memory} if incoming.memory is not None else {})
    key = engine.submit(
        WorkloadBuilder("incoming", NAMESPACE)
        .queue(f"lq-{incoming.cluster_queue}")
        .priority(incoming.priority)
        .pod_set(count=1, **requests)
        .obj(),
        now=1,
    )
    preemptor = engine.workload(key)
    cq = engine.cluster_queue(incoming.cluster_queue)
    assert preemptor is not None
    assert cq is not None
    totals = preemptor.pod_sets[0].total(1)
    usage = {(incoming.flavor, resource): amount for resource, amount in totals.items() if cq.covers(resource)}
    found = find_victims(cq, preemptor, usage, engine.cluster_queues(), fair_sharing=fair_sharing)
    return {victim.workload.name: victim.reason for victim in found or []}
