"""Fair-sharing preemption held to Kueue's own test cases (issue 31's gap 4, the preemption side).

The cases are Kueue v0.17's TestFairPreemptions (preemption_fair_test.go): the same queues,
workloads and expected victims with their reasons. The rules they pin down:

- the target ordering (fairsharing/ordering.go): from the root down, the child with the highest
  dominant resource share gives up a workload next, cohorts not borrowing (off the preemptor's
  path) and ClusterQueues not borrowing are skipped, and the preemptor's own ClusterQueue competes
  by its share (with the incoming workload added) rather than going first;
- a preemptor within its nominal quota reclaims without the strategies (FairSharingPreemptWithinNominal,
  reason InCohortReclamation);
- the strategies LessThanOrEqualToFinalShare, then LessThanInitialShare for what the first refused,
  compare the shares where the two paths meet.

Two of Kueue's cases configure a single strategy (``fairSharing.preemptionStrategies``); the
engine always runs Kueue's default pair, so they are not here.
"""

from __future__ import annotations

import pytest
from kueue_preemption_cases import Incoming, PreemptionCase, Running, cohort, queue, victims

IN_CQ = "InClusterQueue"
RECLAIM = "InCohortReclamation"
FAIR = "InCohortFairSharing"

_BASE_POLICY = {"within": "LowerPriority", "reclaim": "Any", "borrow_within": "LowerPriority", "threshold": -3}
BASE = [
    *(queue(name, "all", 3, **_BASE_POLICY) for name in ("a", "b", "c")),
    queue("preemptible", "all", 0),
]


def _units(cluster_queue: str, count: int, *, priority: int = 0, first: int = 1) -> list[Running]:
    return [Running(f"{cluster_queue}{i}", cluster_queue, priority) for i in range(first, first + count)]


def _base(running: list[Running], incoming: Incoming, want: dict[str, str]) -> PreemptionCase:
    return PreemptionCase(BASE, running, incoming, want)


def _flat_cases() -> list[object]:
    return [
        pytest.param(
            _base(_units("a", 3) + _units("b", 5) + _units("c", 1), Incoming("c"), {"b1": RECLAIM}),
            id="reclaim-nominal-from-user-using-the-most",
        ),
        pytest.param(
            _base(
                [
                    Running("a1", "a", 0, "3"),
                    Running("a2", "a", 0, "1"),
                    Running("b1", "b", 0, "2"),
                    Running("b2", "b", 0, "3"),
                ],
                Incoming("c", 0, "3"),
                {"a1": RECLAIM},
            ),
            id="reclaim-from-a-queue-using-less-when-the-most-using-ones-latest-is-not-enough",
        ),
        pytest.param(
            _base(_units("a", 3) + _units("b", 5) + _units("c", 1), Incoming("a"), {"b1": FAIR}),
            id="reclaim-borrowable-quota-from-user-using-the-most",
        ),
        pytest.param(
            _base(
                [
                    Running("a1", "a", 0, "0.5"),
                    Running("a2", "a", 0, "0.5"),
                    Running("a3", "a", 0, "3"),
                    Running("b1", "b", 0, "0.5"),
                    Running("b2", "b", 0, "0.5"),
                    Running("b3", "b", 0, "3"),
                ],
                Incoming("c", 0, "2"),
                {"a1": RECLAIM, "b1": RECLAIM},
            ),
            id="preempt-one-from-each-borrowing-queue",
        ),
        pytest.param(
            _base(_units("a", 3) + _units("b", 3) + _units("c", 3), Incoming("c"), {}),
            id="nothing-when-everyone-is-under-nominal",
        ),
        pytest.param(
            _base(_units("a", 3) + _units("b", 5), Incoming("a", 0, "2"), {}),
            id="nothing-when-it-would-switch-the-imbalance",
        ),
        pytest.param(
            _base(
                [*_units("a", 2, priority=-1), *_units("a", 2, first=3), *_units("b", 5)],
                Incoming("a", 0, "2"),
                {"a1": IN_CQ, "a2": IN_CQ},
            ),
            id="lower-priority-workloads-of-the-same-queue",
        ),
        pytest.param(
            _base(
                [Running("a_low", "a", -1), *_units("a", 2, first=2), *_units("b", 6)],
                Incoming("a", 0, "2"),
                {"a_low": IN_CQ, "b1": FAIR},
            ),
            id="a-combination-of-the-same-queue-and-the-highest-user",
        ),
        pytest.param(
            _base([Running("b1", "b", 0, "9")], Incoming("a", 0, "2"), {"b1": RECLAIM}),
            id="a-huge-workload-when-the-target-ends-with-a-lower-share",
        ),
        pytest.param(
            _base([Running("a1", "a", 0, "2"), Running("b1", "b", 0, "7")], Incoming("a", 0, "5"), {}),
            id="not-a-huge-workload-for-a-huge-incoming",
        ),
        pytest.param(
            _base(
                [Running("b1", "b", 0, "2"), Running("b2", "b", 0, "2"), Running("b3", "b", 0, "3")],
                Incoming("a", 0, "6"),
                {},
            ),
            id="not-two-smaller-workloads-for-a-huge-incoming",
        ),
        pytest.param(
            _base(
                [
                    Running("a1_low", "a", -1, "2"),
                    Running("a2_low", "a", -1, "1"),
                    Running("b1", "b", 0, "3"),
                    Running("b2", "b", 0, "3"),
                ],
                Incoming("a", 0, "4"),
                {"a1_low": IN_CQ, "b1": FAIR},
            ),
            id="from-own-queue-and-others-even-over-nominal",
        ),
        pytest.param(
            _base(
                [
                    Running("b1", "b", 0, "2"),
                    Running("b2", "b", 0, "1"),
                    Running("b3", "b", 0, "2"),
                    Running("c1", "c", 0, "1"),
                ],
                Incoming("a", 0, "3.5"),
                {"b2": FAIR},
            ),
            id="prefer-workloads-that-do-not-make-the-target-the-biggest-share",
        ),
        pytest.param(
            _base(
                [
                    Running("b1", "b", 0, "2"),
                    Running("b2", "b", 0, "2.5"),
                    Running("c1", "c", 0, "2"),
                    Running("c2", "c", 0, "2.5"),
                ],
                Incoming("a", 0, "3.5"),
                {"b1": FAIR, "c1": FAIR},
            ),
            id="several-queues-when-the-end-result-has-a-smaller-max-share",
        ),
        pytest.param(
            _base(
                [Running("a1", "a", 0, "3.5"), Running("b2", "b", 0, "2.5"), Running("c2", "c", 0, "2.5")],
                Incoming("b", 0, "2"),
                {},
            ),
            id="the-scenario-above-does-not-flap",
        ),
        pytest.param(
            _base(
                [Running("b1", "b", 0, "3"), Running("b2", "b", 0, "3"), Running("c1", "c", 0, "3")],
                Incoming("a", 0, "4"),
                {},
            ),
            id="not-when-the-target-would-go-under-nominal-after-one",
        ),
        pytest.param(
            _base(
                [*_units("a", 3), *_units("b", 3), *(Running(f"preemptible{i}", "preemptible", -3) for i in (1, 2, 3))],
                Incoming("a", 0, "2"),
                {},
            ),
            id="workloads-under-the-priority-threshold-are-not-preempted-capriciously",
        ),
    ]


def _weighted(weight_a: str | None, weight_b: str | None, with_c: bool = True) -> list[object]:
    policy = {"within": "LowerPriority", "reclaim": "Any"}
    queues_ = [queue("a", "all", 3, weight=weight_a, **policy), queue("b", "all", 3, weight=weight_b, **policy)]
    return queues_ + ([queue("c", "all", 3, **policy)] if with_c else [])


def _weight_cases() -> list[object]:
    return [
        pytest.param(
            PreemptionCase(
                _weighted("2", None), _units("a", 3) + _units("b", 6), Incoming("a", 0, "2"), {"b1": FAIR, "b2": FAIR}
            ),
            id="a-queue-with-a-higher-weight-preempts-more",
        ),
        pytest.param(
            PreemptionCase(
                _weighted(None, "0"),
                _units("a", 3) + _units("b", 6),
                Incoming("a", 0, "3"),
                {"b1": FAIR, "b2": FAIR, "b3": FAIR},
            ),
            id="anything-borrowing-from-a-queue-of-weight-zero",
        ),
        pytest.param(
            PreemptionCase(_weighted(None, "0", with_c=False), _units("a", 3) + _units("b", 3), Incoming("a"), {}),
            id="not-the-nominal-quota-of-a-queue-of-weight-zero",
        ),
        pytest.param(
            PreemptionCase(
                [
                    queue("left-cq", "root", 0, reclaim="Any"),
                    queue("right-cq", "right-cohort", 0, reclaim="Any", weight="0"),
                ],
                [Running("right-1", "right-cq")],
                Incoming("left-cq"),
                {},
                cohorts=[cohort("right-cohort", "root", 1, weight="0")],
            ),
            id="not-the-nominal-quota-of-a-cohort-of-weight-zero",
        ),
        pytest.param(
            PreemptionCase(
                [queue("a", None, 1, within="LowerPriority")], [Running("a1", "a")], Incoming("a", 1000), {"a1": IN_CQ}
            ),
            id="within-the-queue-when-there-is-no-cohort",
        ),
        pytest.param(
            PreemptionCase(
                [queue("a", "ROOT", 1, reclaim="Any", weight="0"), queue("b", "ROOT", 0, weight="1")],
                [Running("b1", "b")],
                Incoming("a"),
                {"b1": RECLAIM},
            ),
            id="a-queue-of-weight-zero-reclaims-its-nominal-quota",
        ),
        pytest.param(
            PreemptionCase(
                [queue("a", "A", 0, reclaim="Any", weight="0"), queue("b", "ROOT", 0, weight="1")],
                [Running("b1", "b")],
                Incoming("a"),
                {"b1": FAIR},
                cohorts=[cohort("A", "ROOT", 1, weight="0")],
            ),
            id="a-cohort-of-weight-zero-reclaims-its-nominal-quota",
        ),
    ]


def _hierarchical_cases() -> list[object]:
    five_each = [Running(f"{q}{p}", q, p) for q in "bcde" for p in range(1, 6)]
    return [
        pytest.param(
            PreemptionCase(
                [
                    queue("a", "LEFT", 1, reclaim="Any", weight="2"),
                    queue("b", "LEFT", 1),
                    queue("c", "ROOT", 1),
                    queue("d", "RIGHT", 1),
                    queue("e", "RIGHT", 1, weight="0.99"),
                ],
                five_each,
                Incoming("a", 0, "5"),
                {"b1": FAIR, "b2": FAIR, "c1": FAIR, "c2": FAIR, "e1": FAIR},
                cohorts=[cohort("ROOT", None, 5), cohort("LEFT", "ROOT", 5, weight="2"), cohort("RIGHT", "ROOT", 5)],
            ),
            id="hierarchical-preemption-walks-the-highest-share-down-the-tree",
        ),
        pytest.param(
            PreemptionCase(
                [
                    queue("a", "ROOT", 5, within="LowerPriority", reclaim="Any", weight="10"),
                    queue("b", "RIGHT", 0, weight="0.1"),
                ],
                [*_units("a", 3, priority=-1), Running("b1", "b", -1)],
                Incoming("a", 0, "5"),
                {"a1": IN_CQ, "a2": IN_CQ, "a3": IN_CQ},
                cohorts=[cohort("ROOT"), cohort("RIGHT", "ROOT", 1, weight="0.1")],
            ),
            id="a-borrowing-queue-in-a-cohort-that-does-not-borrow-is-protected",
        ),
        pytest.param(
            PreemptionCase(
                [
                    queue("a", "ROOT", 5, within="LowerPriority", reclaim="LowerPriority", weight="10"),
                    queue("b", "RIGHT", 0, weight="0.1"),
                ],
                [*_units("a", 3, priority=-1), Running("b1", "b", 100, "4")],
                Incoming("a", 0, "4"),
                {"a1": IN_CQ, "a2": IN_CQ, "a3": IN_CQ},
                cohorts=[cohort("ROOT"), cohort("RIGHT", "ROOT", 3, weight="0.1")],
            ),
            id="forced-to-preempt-within-the-queue-when-the-borrower-is-too-important",
        ),
        pytest.param(_deep_preemption(), id="deep-preemption-compares-the-subtrees-where-the-paths-meet"),
        pytest.param(
            PreemptionCase(
                [
                    queue("a", "all", {"premium": 3, "cheap": 0}, reclaim="Any"),
                    queue("b", "all", {"premium": 0, "cheap": 6}),
                ],
                [
                    *(Running(f"a_prem{i}", "a", flavor="premium") for i in (1, 2)),
                    *(Running(f"a_cheap{i}", "a", flavor="cheap") for i in range(1, 6)),
                    Running("b_prem1", "b", flavor="premium"),
                ],
                Incoming("a", flavor="premium"),
                {"b_prem1": RECLAIM},
                flavors=("premium", "cheap"),
            ),
            id="nominal-first-a-workload-within-nominal-preempts-despite-a-high-aggregate-share",
        ),
    ]


def _deep_preemption() -> PreemptionCase:
    cohorts = [
        cohort("ROOT"),
        cohort("A", "ROOT", weight="1.01"),
        cohort("B", "ROOT", weight="0.99"),
        cohort("C", "ROOT"),
    ]
    for top in "ABC":
        cohorts += [cohort(top * 2, top), cohort(top * 3, top * 2)]
    cohorts.append(cohort("CCCC", "CCC", 1))
    return PreemptionCase(
        [queue("a", "AAA", 0, reclaim="Any"), queue("b", "BBB", 0)],
        [Running("b1", "b")],
        Incoming("a"),
        {"b1": FAIR},
        cohorts=cohorts,
    )


@pytest.mark.parametrize("case", _flat_cases() + _weight_cases() + _hierarchical_cases())
def test_fair_preemption_evicts_what_kueue_evicts(case: PreemptionCase) -> None:
    assert victims(case, fair_sharing=True) == case.want
