"""Classical preemption held to Kueue's own test cases (issue 31's gaps 2 and 3).

The cases are the shapes of Kueue v0.17's TestPreemption (preemption_test.go) and
TestHierarchicalPreemptions (preemption_hierarchical_test.go): the same queues, workloads and
expected victims with their reasons. The rules they pin down:

- search order (classicalPreemptions): "borrowing allowed" is tried first, and "within nominal,
  then borrowing" only when ``borrowWithinCohort`` is off and no candidate has a hierarchical
  advantage; with ``borrowWithinCohort`` off and the preemptor at or over nominal, only borrowing;
- candidate validity (candidateIsValid): a candidate of another ClusterQueue is passed over once
  that queue, or a cohort between it and where the paths meet, is back within nominal quota;
- hierarchical advantage (collectCandidatesForHierarchicalReclaim): candidates found above the
  level where the preemptor's subtree holds its request are taken first, whatever their priority
  or the borrowing policy, and are evicted for reclamation.
"""

from __future__ import annotations

import pytest
from builders import ClusterQueueBuilder, CohortBuilder
from kueue_preemption_cases import Incoming, PreemptionCase, Running, cohort, queue, victims

IN_CQ = "InClusterQueue"
RECLAIM = "InCohortReclamation"
WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

# preemption_test.go's defaultClusterQueues, those the cases below use
C1 = queue(
    "c1",
    "cohort",
    6,
    cpu_borrowing_limit=6,
    memory="3Gi",
    memory_borrowing_limit="3Gi",
    within="LowerPriority",
    reclaim="LowerPriority",
)
C2 = queue(
    "c2", "cohort", 6, cpu_borrowing_limit=6, memory="3Gi", memory_borrowing_limit="3Gi", within="Never", reclaim="Any"
)
_SHARED_POLICY = {"borrow_within": "LowerPriority", "threshold": 0}
A_STANDARD = queue("a_standard", "with_shared_cq", 1, cpu_borrowing_limit=12, reclaim="LowerPriority", **_SHARED_POLICY)
B_STANDARD = queue(
    "b_standard", "with_shared_cq", 1, cpu_borrowing_limit=12, within="LowerPriority", reclaim="Any", **_SHARED_POLICY
)
A_BEST_EFFORT = queue(
    "a_best_effort", "with_shared_cq", 1, cpu_borrowing_limit=12, reclaim="LowerPriority", **_SHARED_POLICY
)
B_BEST_EFFORT = queue(
    "b_best_effort", "with_shared_cq", 0, cpu_borrowing_limit=13, reclaim="LowerPriority", **_SHARED_POLICY
)
SHARED = queue("shared", "with_shared_cq", 10)
WITH_SHARED_CQ = [A_STANDARD, B_STANDARD, A_BEST_EFFORT, B_BEST_EFFORT, SHARED]
LEND1 = queue("lend1", "cohort-lend", 6, cpu_lending_limit=4, within="LowerPriority", reclaim="LowerPriority")
LEND2 = queue("lend2", "cohort-lend", 6, cpu_lending_limit=2, within="LowerPriority", reclaim="LowerPriority")


def _flat_cases() -> list[object]:
    return [
        pytest.param(
            PreemptionCase(
                [C1, C2],
                [Running("c1-low", "c1", -1, "3"), Running("c2-mid", "c2", 0, "3"), Running("c2-high", "c2", 1, "6")],
                Incoming("c1", 1, "3"),
                {"c2-mid": RECLAIM},
            ),
            id="reclaim-quota-from-borrower",
        ),
        pytest.param(
            PreemptionCase(
                [C1, C2],
                [
                    Running("c1-low", "c1", -1, "3"),
                    Running("c1-mid", "c1", 0, "2"),
                    Running("c2-low", "c2", -1, "3"),
                    Running("c2-mid", "c2", 0, "4"),
                ],
                Incoming("c1", 0, "4"),
                {"c1-low": IN_CQ, "c2-low": RECLAIM},
            ),
            id="preempt-from-all-cluster-queues-in-cohort",
        ),
        pytest.param(
            PreemptionCase(
                [C1, C2],
                [Running("c1-med", "c1", 0, "4"), Running("c1-low", "c1", -1, "4"), Running("c2-low-1", "c2", -1, "4")],
                Incoming("c1", 1, "4"),
                {"c1-low": IN_CQ},
            ),
            id="preempting-locally-and-borrowing-same-resource-in-cohort",
        ),
        pytest.param(
            PreemptionCase(
                [C1, C2],
                [Running("c1-high", "c1", 1, "4"), Running("c2-low-1", "c2", -1, "4")],
                Incoming("c1", 1, "4"),
                {},
            ),
            id="no-workloads-borrowing",
        ),
        pytest.param(
            PreemptionCase(
                [LEND1, LEND2],
                [
                    Running("lend1-low", "lend1", -1, "3"),
                    Running("lend2-mid", "lend2", 0, "3"),
                    Running("lend2-high", "lend2", 1, "4"),
                ],
                Incoming("lend1", 1, "3"),
                {"lend2-mid": RECLAIM},
            ),
            id="reclaim-quota-from-lender",
        ),
        pytest.param(
            PreemptionCase(
                WITH_SHARED_CQ,
                [
                    Running("a_best_effort_low", "a_best_effort", -1, "10"),
                    Running("b_best_effort_low", "b_best_effort", -1, "1"),
                ],
                Incoming("a_standard", 0, "10"),
                {"a_best_effort_low": WHILE_BORROWING},
            ),
            id="borrow-within-cohort-preempts-a-lower-priority-borrower-while-borrowing",
        ),
        pytest.param(
            PreemptionCase(
                WITH_SHARED_CQ, [Running("b_standard", "b_standard", 1, "10")], Incoming("a_standard", 2, "10"), {}
            ),
            id="borrow-within-cohort-spares-a-workload-above-the-threshold-while-still-borrowing",
        ),
        pytest.param(
            PreemptionCase(
                WITH_SHARED_CQ,
                [Running("b_standard", "b_standard", 1, "13")],
                Incoming("a_standard", 2, "1"),
                {"b_standard": RECLAIM},
            ),
            id="borrow-within-cohort-takes-a-workload-above-the-threshold-when-ending-within-nominal",
        ),
        pytest.param(
            PreemptionCase(
                WITH_SHARED_CQ,
                [
                    Running("a_standard_1", "a_standard", 1, "10"),
                    Running("a_standard_2", "a_standard", 1, "1"),
                    Running("b_standard_1", "b_standard", 1, "1"),
                    Running("b_standard_2", "b_standard", 2, "1"),
                ],
                Incoming("b_standard", 3, "1"),
                {"b_standard_1": IN_CQ},
            ),
            id="borrow-within-cohort-only-own-queue-when-nobody-is-under-the-threshold-and-over-nominal",
        ),
        pytest.param(
            PreemptionCase(
                WITH_SHARED_CQ,
                [
                    Running("b_standard_high", "b_standard", 2, "10"),
                    Running("b_standard_mid", "b_standard", 1, "1"),
                    Running("a_best_effort_low", "a_best_effort", -1, "1"),
                    Running("a_best_effort_lower", "a_best_effort", -2, "1"),
                ],
                Incoming("b_standard", 2, "2"),
                {"a_best_effort_lower": WHILE_BORROWING, "b_standard_mid": IN_CQ},
            ),
            id="candidate-validity-stops-taking-from-a-queue-back-within-nominal",
        ),
        pytest.param(
            PreemptionCase(
                WITH_SHARED_CQ,
                [
                    Running("b_standard_low", "b_standard", -1, "1"),
                    Running("a_best_effort_low", "a_best_effort", -1, "12"),
                ],
                Incoming("b_standard", 2, "1"),
                {"a_best_effort_low": WHILE_BORROWING},
            ),
            id="borrowing-allowed-first-spares-the-preemptors-own-workload",
        ),
    ]


Topology = list[ClusterQueueBuilder | CohortBuilder]


def _hierarchy(*queues_: ClusterQueueBuilder, root_cpu: int | None = None, c_cpu: int = 2) -> Topology:
    """Kueue's usual tree: root cohort ``r`` (``root_cpu`` of its own), child cohort ``c``."""
    return [cohort("r", cpu=root_cpu), cohort("c", "r", c_cpu), *queues_]


Q = queue("q", "c", 0, within="LowerPriority", reclaim="Any")
Q_BWC = queue("q", "c", 0, within="LowerPriority", reclaim="Any", borrow_within="LowerPriority", threshold=0)
Q_LOWER_BWC = queue(
    "q", "c", 0, within="LowerPriority", reclaim="LowerPriority", borrow_within="LowerPriority", threshold=0
)
Q_BORROWING = queue("q_borrowing", "r", 0, within="LowerPriority", reclaim="Any")
Q_NOMINAL = queue("q_nominal", "r", 2, within="LowerPriority", reclaim="Any")
Q_SAME_COHORT = queue("q_same_cohort", "c", 0, within="LowerPriority", reclaim="Any")


def _case(topology: Topology, running: list[Running], incoming: Incoming, want: dict[str, str]) -> PreemptionCase:
    cohorts = [t for t in topology if isinstance(t, CohortBuilder)]
    queues_ = [t for t in topology if isinstance(t, ClusterQueueBuilder)]
    return PreemptionCase(queues_, running, incoming, want, cohorts=cohorts)


def _hierarchical_cases() -> list[object]:
    return [
        pytest.param(
            _case(
                _hierarchy(Q, Q_BORROWING),
                [Running("admitted2", "q_borrowing", 0, "2")],
                Incoming("q", 0, "2"),
                {"admitted2": RECLAIM},
            ),
            id="preempt-with-hierarchical-advantage",
        ),
        pytest.param(
            _case(
                _hierarchy(Q_NOMINAL, Q, Q_BORROWING),
                [Running("admitted1", "q_nominal", -10, "2"), Running("admitted2", "q_borrowing", 0, "2")],
                Incoming("q", 0, "2"),
                {"admitted2": RECLAIM},
            ),
            id="avoid-queues-within-nominal-quota",
        ),
        pytest.param(
            _case(
                _hierarchy(Q, Q_BORROWING),
                [Running("admitted1", "q_borrowing", 1, "1"), Running("admitted2", "q_borrowing", 2, "1")],
                Incoming("q", 0, "2"),
                {"admitted1": RECLAIM, "admitted2": RECLAIM},
            ),
            id="preempt-multiple-with-hierarchical-advantage",
        ),
        pytest.param(
            _case(
                _hierarchy(Q_BWC, Q_SAME_COHORT, c_cpu=3),
                [
                    Running("admitted_not_preemptible", "q_same_cohort", 1, "1"),
                    Running("admitted_preemptible", "q_same_cohort", 0, "1"),
                    Running("admitted_own_queue", "q", -1, "1"),
                ],
                Incoming("q", 1, "2"),
                {"admitted_own_queue": IN_CQ, "admitted_preemptible": WHILE_BORROWING},
            ),
            id="preempt-in-cohort-and-own-queue",
        ),
        pytest.param(
            _case(
                _hierarchy(Q, Q_BORROWING),
                [Running("admitted_borrowing", "q_borrowing", 1, "1"), Running("admitted_same_queue", "q", -2, "1")],
                Incoming("q", 0, "1"),
                {"admitted_borrowing": RECLAIM},
            ),
            id="prefer-to-preempt-hierarchical-candidate",
        ),
        pytest.param(
            _case(
                _hierarchy(Q_BWC, Q_NOMINAL, Q_SAME_COHORT),
                [
                    Running("admitted_nominal", "q_nominal", -10, "2"),
                    Running("admitted_same_cohort", "q_same_cohort", -1, "2"),
                ],
                Incoming("q", 0, "2"),
                {"admitted_same_cohort": WHILE_BORROWING},
            ),
            id="forced-to-preempt-priority-candidate",
        ),
        pytest.param(
            _case(
                _hierarchy(queue("q", "c", 4, within="LowerPriority", reclaim="Any"), Q_BORROWING, Q_SAME_COHORT),
                [
                    Running("admitted_borrowing", "q_borrowing", 10, "3"),
                    Running("admitted_same_cohort", "q_same_cohort", 10, "3"),
                ],
                Incoming("q", 0, "4"),
                {"admitted_borrowing": RECLAIM, "admitted_same_cohort": RECLAIM},
            ),
            id="incoming-workload-fits-in-its-nominal-quota",
        ),
        pytest.param(
            _case(
                _hierarchy(Q_LOWER_BWC, Q_BORROWING, Q_SAME_COHORT, root_cpu=1, c_cpu=4),
                [
                    Running("admitted_borrowing", "q_borrowing", -1, "2"),
                    Running("admitted_same_cohort_preemptible", "q_same_cohort", -1, "1"),
                    Running("admitted_borrowing_not_preemptible", "q_borrowing", 1, "2"),
                ],
                Incoming("q", 0, "3"),
                {"admitted_borrowing": RECLAIM, "admitted_same_cohort_preemptible": WHILE_BORROWING},
            ),
            id="preempt-hierarchical-and-priority-candidates",
        ),
        pytest.param(
            _case(
                _hierarchy(Q_LOWER_BWC, Q_BORROWING, Q_SAME_COHORT, root_cpu=1, c_cpu=4),
                [
                    Running("admitted_borrowing", "q_borrowing", -1, "2"),
                    Running("admitted_same_queue_preemptible", "q", -1, "1"),
                    Running("admitted_borrowing_not_preemptible", "q_borrowing", 1, "2"),
                ],
                Incoming("q", 0, "3"),
                {"admitted_borrowing": RECLAIM, "admitted_same_queue_preemptible": IN_CQ},
            ),
            id="preempt-hierarchical-candidates-and-inside-own-queue",
        ),
        pytest.param(
            _case(
                _hierarchy(Q, Q_BORROWING, Q_NOMINAL, c_cpu=3),
                [
                    Running("admitted_borrowing_prio_8", "q_borrowing", 8, "1"),
                    Running("admitted_borrowing_prio_9", "q_borrowing", 9, "1"),
                    Running("admitted_borrowing_prio_10", "q_borrowing", 9, "1"),
                    Running("admitted_nominal", "q_nominal", -2, "2"),
                ],
                Incoming("q", 0, "1"),
                {"admitted_borrowing_prio_8": RECLAIM},
            ),
            id="reclaim-nominal-quota-from-lowest-priority-excluding-non-borrowing",
        ),
        pytest.param(
            _case(
                [
                    cohort("r"),
                    cohort("c", "r", 2),
                    cohort("c_other", "r", 2),
                    queue("q_other", "c_other", 0, within="LowerPriority", reclaim="Any"),
                    Q,
                    Q_SAME_COHORT,
                ],
                [
                    Running("admitted_other_1", "q_other", -10, "1"),
                    Running("admitted_other_2", "q_other", -10, "1"),
                    Running("admitted_same_cohort", "q_same_cohort", 0, "2"),
                ],
                Incoming("q", 0, "2"),
                {},
            ),
            id="infeasible-when-all-candidates-are-in-pruned-subtrees",
        ),
        pytest.param(
            _case(
                _hierarchy(queue("q", "c", 3, cpu_lending_limit=2, within="LowerPriority", reclaim="Any"), Q_BORROWING),
                [Running("admitted_borrowing", "q_borrowing", 0, "4")],
                Incoming("q", -2, "5"),
                {"admitted_borrowing": RECLAIM},
            ),
            id="respect-lending-limits",
        ),
        pytest.param(_complex_hierarchy(), id="reclaim-in-complex-hierarchy-stops-at-a-cohort-back-within-nominal"),
    ]


def _complex_hierarchy() -> PreemptionCase:
    cohorts = [
        cohort("r"),
        *(cohort(name, "r", 4) for name in ("c11", "c12")),
        *(cohort(name, "c11", 4) for name in ("c21", "c22", "c23")),
        *(cohort(name, "c21", 4) for name in ("c31", "c32")),
    ]
    queues_ = [
        queue(name, parent, 0, within="LowerPriority", reclaim="Any")
        for name, parent in (("q1", "c12"), ("q2", "c23"), ("q3", "c22"), ("q4", "c32"), ("q5", "c31"))
    ]
    running = [
        Running("admitted_borrowing_1", "q1", -6, "4"),
        Running("admitted_borrowing_2", "q1", -5, "4"),
        Running("admitted_borrowing_3", "q2", -9, "4"),
        Running("admitted_borrowing_4", "q2", -10, "4"),
        Running("admitted_borrowing_5", "q3", -4, "4"),
        Running("admitted_borrowing_6", "q3", -3, "3"),
        Running("admitted_borrowing_7", "q4", 4, "2"),
        Running("admitted_borrowing_8", "q4", 2, "3"),
    ]
    want = {"admitted_borrowing_1": RECLAIM, "admitted_borrowing_4": RECLAIM}
    return PreemptionCase(queues_, running, Incoming("q5", -2, "7"), want, cohorts=cohorts)


@pytest.mark.parametrize("case", _flat_cases() + _hierarchical_cases())
def test_classical_preemption_evicts_what_kueue_evicts(case: PreemptionCase) -> None:
    assert victims(case) == case.want
