"""Partial admission held to Kueue's own cases (issue 31's gap 1).

Kueue (getInitialAssignments in pkg/scheduler/scheduler.go) tries a workload whole first; when it
neither fits nor finds victims, PodSetReducer.Search (flavorassigner/podset_reducer.go) walks
every pod set with a ``minCount`` down together, and accepts the largest counts that fit
outright *or by preempting*. The cycle cases are the shapes of Kueue v0.17's TestSchedule
"partial admission ..." cases (scheduler_test.go): Kueue evicts in one cycle and admits the
reduced workload in the next, the engine does both at once, so the expected outcome is the one
Kueue reaches after its second cycle. The search cases are Kueue's TestSearch
(podset_reducer_test.go), with a fit test that sums the counts against a limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue

from scheduler.engine import AdmissionEngine
from scheduler.engine.flavors import search_reduced_counts


@dataclass(frozen=True)
class PartialCase:
    gpu_quota: int
    admitted: list[tuple[str, int, int]]  # name, priority, gpus
    pod_sets: list[tuple[str, int, int | None]]  # name, count, minCount; one gpu per pod
    priority: int
    want_counts: dict[str, int] | None  # None: the workload waits
    want_preempted: set[str]


def _run(case: PartialCase) -> tuple[dict[str, int] | None, set[str]]:
    engine = AdmissionEngine()
    engine.apply(flavor("model-a"))
    engine.apply(
        ClusterQueueBuilder("eng-beta")
        .quota("model-a", "example.com/gpu", case.gpu_quota)
        .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
        .obj()
    )
    engine.apply(local_queue("main", "eng-beta", "eng-beta"))
    for name, priority, gpus in case.admitted:
        running = WorkloadBuilder(name, "eng-beta").queue("main").priority(priority)
        running.pod_set(count=gpus, name="one", **{"example.com/gpu": "1"})
        engine.submit(running.admitted("eng-beta", {"example.com/gpu": "model-a"}).obj(), now=0)
    new = WorkloadBuilder("new", "eng-beta").queue("main").priority(case.priority)
    for name, count, min_count in case.pod_sets:
        new.pod_set(count=count, name=name, min_count=min_count, **{"example.com/gpu": "1"})
    key = engine.submit(new.obj(), now=1)
    result = engine.schedule(2)
    counts = next((a.counts for a in result.admitted if a.key == key), None)
    return counts, {p.key.split("/")[1] for p in result.preempted}


CYCLE_CASES = [
    pytest.param(
        PartialCase(20, [("old", -4, 10)], [("one", 30, 10)], 4, {"one": 20}, {"old"}),
        id="a-reduced-count-that-fits-by-preempting-is-accepted",
    ),
    pytest.param(
        PartialCase(20, [("old", -4, 10)], [("one", 20, 10)], 4, {"one": 20}, {"old"}),
        id="preempting-for-the-whole-count-comes-before-reducing",
    ),
    pytest.param(
        PartialCase(50, [], [("one", 100, 40)], 0, {"one": 50}, set()),
        id="the-largest-count-that-fits-outright",
    ),
    pytest.param(
        PartialCase(
            50,
            [],
            [("one", 20, None), ("two", 30, 10), ("three", 15, 5)],
            0,
            {"one": 20, "two": 20, "three": 10},
            set(),
        ),
        id="several-pod-sets-with-min-count-give-up-the-same-fraction",
    ),
    pytest.param(
        PartialCase(20, [("old", 10, 15)], [("one", 30, 10)], 4, None, set()),
        id="no-count-down-to-min-count-fits-even-by-preempting",
    ),
]


@pytest.mark.parametrize("case", CYCLE_CASES)
def test_partial_admission_reaches_kueues_outcome(case: PartialCase) -> None:
    counts, preempted = _run(case)
    assert counts == case.want_counts
    assert preempted == case.want_preempted


def _pod_sets(*shapes: tuple[int, int | None]) -> list[object]:
    engine = AdmissionEngine()
    workload = WorkloadBuilder("shape")
    for index, (count, min_count) in enumerate(shapes):
        workload.pod_set(count=count, name=f"ps{index + 1}", min_count=min_count, cpu="1")
    key = engine.submit(workload.obj(), now=0)
    info = engine.workload(key)
    assert info is not None
    return list(info.pod_sets)


SEARCH_CASES = [
    pytest.param([], 10, None, id="empty"),
    pytest.param([(1, None), (2, 2)], 2, None, id="partial-not-available"),
    pytest.param([(5, 3), (5, 4), (5, 1), (5, 2)], 15, 15, id="partial-available"),
    pytest.param([(5, 3), (5, None), (5, None), (5, None)], 19, 19, id="one-partial-available"),
    pytest.param([(5, 3), (5, 4), (5, 1), (5, 2)], 10, 10, id="to-min"),
    pytest.param([(5, 3), (5, 4), (5, 1), (5, 2)], 20, 20, id="to-max"),
    pytest.param([(150_000, 1)] * 8, 150_000, 150_000, id="no-overflow"),
    pytest.param([(150_000, 1)] + [(1, None)] * 7, 150_000, 150_000, id="max-pods"),
]


@pytest.mark.parametrize(("shapes", "limit", "want"), SEARCH_CASES)
def test_reduced_counts_search_finds_what_kueues_reducer_finds(
    shapes: list[tuple[int, int | None]], limit: int, want: int | None
) -> None:
    pod_sets = _pod_sets(*shapes)

    def fits(counts: list[int]) -> int | None:
        return sum(counts) if sum(counts) <= limit else None

    assert search_reduced_counts(pod_sets, fits) == want
