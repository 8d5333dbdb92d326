"""The order of a cycle's heads with fair sharing, held to Kueue's own cases (issue 31's gap 4).

Kueue (pkg/scheduler/fair_sharing_iterator.go) does not sort the heads by their ClusterQueue's
share: it runs a tournament over the cohort tree for each head it takes. At every cohort the
children are weighed by their own share with their nominee's usage added: a child that would not
borrow on the flavors its nominee asks for first (FairSharingPrioritizeNonBorrowing), then the
lower share, the higher priority, the earlier queue time. The cases are the shapes of Kueue
v0.17's TestSchedule cases with fair sharing (scheduler_test.go); each runs one cycle, one head
per ClusterQueue, as Kueue's scheduler does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from builders import ClusterQueueBuilder, CohortBuilder, WorkloadBuilder, flavor, local_queue

from scheduler.engine import AdmissionEngine, EngineConfig

NAMESPACE = "eng-alpha"


@dataclass(frozen=True)
class Cycle:
    cohorts: list[tuple[str, str | None, int | None]]  # name, parent, cpu quota
    queues: list[tuple[str, str, int]]  # name, cohort, nominal cpu
    admitted: list[tuple[str, str, int]]  # name, ClusterQueue, cpu
    pending: list[tuple[str, str, int]]  # name, ClusterQueue, cpu
    want_admitted: set[str]
    priorities: dict[str, int] = field(default_factory=dict)


def _run(case: Cycle) -> set[str]:
    engine = AdmissionEngine(EngineConfig(fair_sharing=True, multiple_admissions_per_cycle=False))
    engine.apply(flavor("on-demand"))
    for name, parent, cpu in case.cohorts:
        cohort = CohortBuilder(name)
        if parent is not None:
            cohort.parent(parent)
        if cpu is not None:
            cohort.quota("on-demand", "cpu", cpu)
        engine.apply(cohort.obj())
    for name, cohort_name, cpu in case.queues:
        engine.apply(ClusterQueueBuilder(name).cohort(cohort_name).quota("on-demand", "cpu", cpu).obj())
        engine.apply(local_queue(f"lq-{name}", NAMESPACE, name))
    for name, cq, cpu in case.admitted:
        workload = WorkloadBuilder(name, NAMESPACE).queue(f"lq-{cq}").pod_set(count=1, cpu=str(cpu))
        engine.submit(workload.admitted(cq, {"cpu": "on-demand"}).obj(), now=0)
    for name, cq, cpu in case.pending:
        workload = WorkloadBuilder(name, NAMESPACE).queue(f"lq-{cq}").priority(case.priorities.get(name, 0))
        engine.submit(workload.pod_set(count=1, cpu=str(cpu)).obj(), now=0)
    return {admission.key.split("/")[1] for admission in engine.schedule(1).admitted}


CASES = [
    pytest.param(
        Cycle(
            cohorts=[("A", None, 200), ("B", "A", None), ("C", "A", None)],
            queues=[("d", "B", 0), ("e", "B", 0), ("f", "C", 0), ("g", "C", 0)],
            admitted=[("d0", "d", 10), ("e0", "e", 20), ("g0", "g", 100)],
            pending=[("d1", "d", 70), ("e1", "e", 61), ("f1", "f", 1), ("g1", "g", 1)],
            want_admitted={"d1"},
        ),
        id="the-workload-that-wins-the-tournament-at-every-level-goes-first",
    ),
    pytest.param(
        Cycle(
            cohorts=[("root", None, None), ("Cohort-A", "root", 10), ("Cohort-B", "root", None)],
            queues=[("cq-a", "Cohort-A", 0), ("cq-b", "Cohort-B", 5), ("cq-c", "Cohort-B", 0)],
            admitted=[("c0", "cq-c", 10)],
            pending=[("wl-a", "cq-a", 5), ("wl-b", "cq-b", 5)],
            want_admitted={"wl-a"},
        ),
        id="a-subtree-not-borrowing-wins-over-a-borrowing-one",
    ),
    pytest.param(
        Cycle(
            cohorts=[
                ("root", None, None),
                ("Cohort-A", "root", None),
                ("SUB-A", "Cohort-A", 10),
                ("Cohort-B", "root", None),
            ],
            queues=[("cq-a", "SUB-A", 0), ("cq-b", "Cohort-B", 5), ("cq-c", "Cohort-B", 0)],
            admitted=[("c0", "cq-c", 10)],
            pending=[("wl-a", "cq-a", 5), ("wl-b", "cq-b", 5)],
            want_admitted={"wl-a"},
        ),
        id="not-borrowing-is-judged-at-each-level-of-a-deeper-tree",
    ),
    pytest.param(
        Cycle(
            cohorts=[("root", None, None), ("Cohort-A", "root", 10), ("Cohort-B", "root", 10)],
            queues=[
                ("cq-a1", "Cohort-A", 5),
                ("cq-a2", "Cohort-A", 3),
                ("cq-b", "Cohort-B", 5),
                ("cq-c", "Cohort-B", 3),
            ],
            admitted=[("a2-admitted", "cq-a2", 6), ("c-admitted", "cq-c", 20)],
            pending=[("wl-a1", "cq-a1", 7), ("wl-b", "cq-b", 4)],
            want_admitted={"wl-a1"},
        ),
        id="with-quota-in-queues-and-cohorts-the-subtree-not-borrowing-wins",
    ),
    pytest.param(
        Cycle(
            cohorts=[("A", None, 100)],
            queues=[("b", "A", 0), ("c", "A", 0)],
            admitted=[("b0", "b", 10)],
            pending=[("b1", "b", 50), ("c1", "c", 75)],
            want_admitted={"b1"},
        ),
        id="the-lowest-share-after-admission-goes-first",
    ),
    pytest.param(
        Cycle(
            cohorts=[("A", None, 10)],
            queues=[("b", "A", 0), ("c", "A", 0)],
            admitted=[],
            pending=[("b1", "b", 10), ("c1", "c", 10)],
            want_admitted={"c1"},
            priorities={"b1": 99, "c1": 101},
        ),
        id="between-equal-shares-the-higher-priority-goes-first",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_fair_sharing_admits_in_kueues_tournament_order(case: Cycle) -> None:
    assert _run(case) == case.want_admitted
