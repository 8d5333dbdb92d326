"""t* through the capacity mechanism (BestTier) against a full recount, the ledger's and checker's fast paths."""

from __future__ import annotations

import datetime
import random

import numpy as np
import pytest

from simulations.cluster_spec import (
    GPU_RESOURCE,
    ClusterSpec,
    QueueSpec,
    TeamSpec,
    build_node_documents,
    build_queues,
    build_topology,
    capacity_by_model,
    flavor_name,
    nodes_from_documents,
)
from simulations.invariants import GPU, RESOURCES, InvariantChecker, NodeLedger
from simulations.kwok import _delay_text
from simulations.kwok.query import _walk, compile_query, run_query
from simulations.workloads import JobSpec

SPEC = ClusterSpec(zones=2, spines_per_zone=2, blocks_per_spine=3, nodes_per_block=4, nvlink_nodes=2)


def ledger() -> NodeLedger:
    return NodeLedger(nodes_from_documents(build_node_documents(SPEC)), SPEC.levels)


def recount(
    ledger: NodeLedger, pods: int, amounts: np.ndarray, selector: dict[str, str], levels: int | None = None
) -> int:
    """t* the plain way: every node's slots from scratch, summed per domain with a dict."""
    slots = []
    for i in range(len(ledger.names)):
        free = ledger.allocatable[i] - ledger.used[i]
        fits = min(int(free[c]) // int(amounts[c]) for c in range(len(RESOURCES)) if amounts[c] > 0)
        eligible = ledger.ready[i] and all(ledger.labels[i].get(k) == v for k, v in selector.items())
        slots.append(max(fits, 0) if eligible else 0)
    for depth in range((len(ledger.levels) if levels is None else levels) - 1, -1, -1):
        per_domain: dict[tuple[str, ...], int] = {}
        for i, count in enumerate(slots):
            path = tuple(ledger.labels[i].get(label, "") for label in ledger.levels[: depth + 1])
            per_domain[path] = per_domain.get(path, 0) + count
        if max(per_domain.values()) >= pods:
            return depth
    return -1


SHAPES = [
    np.array([8000, 64 << 30, 8, 1], dtype=np.int64),
    np.array([2000, 16 << 30, 2, 1], dtype=np.int64),
    np.array([500, 1 << 30, 0, 1], dtype=np.int64),
]


@pytest.mark.parametrize("held", [1, 3, 1024], ids=["each change at once", "flushed every 3", "held to the query"])
def test_best_tier_matches_a_full_recount_through_places_releases_and_failures(
    held: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("simulations.tiers.MAX_PENDING_CHANGES", held)
    nodes = ledger()
    rng = random.Random(7)
    selectors: list[dict[str, str]] = [{}, {SPEC.levels[0]: "zone-0"}, {SPEC.levels[0]: "zone-1", "absent": "x"}]
    first_zone = sum(labels.get(SPEC.levels[0]) == "zone-0" for labels in nodes.labels)
    assert 0 < first_zone < len(nodes.names)
    placed: list[str] = []
    answers = set()
    for step in range(800):
        action = rng.random()
        if action < 0.5 or not placed:
            amounts = rng.choice(SHAPES)
            chosen = [rng.choice(nodes.names) for _ in range(rng.randint(1, 4))]  # a node may repeat
            nodes.place(f"w{step}", chosen, amounts)
            placed.append(f"w{step}")
        elif action < 0.85:
            nodes.release(placed.pop(rng.randrange(len(placed))))
        else:
            i = rng.randrange(len(nodes.names))
            nodes.ready[i] = not nodes.ready[i]  # the simulator flips Ready in place
        if rng.random() < 0.6:
            continue  # several changes pile up before the next query
        for amounts in SHAPES:
            for selector in selectors:
                pods = rng.randint(1, 20)
                expected = recount(nodes, pods, amounts, selector)
                assert nodes.best_possible_level(pods, amounts, selector) == expected, step
                answers.add(expected)
    assert len(answers) > 2  # the walk reached several tiers, not one answer throughout


def test_best_tier_stays_exact_past_the_capacity_states_shape_cache() -> None:
    nodes = ledger()
    # more shapes than CapacityState caches: the least recently asked is evicted and recounted
    shapes = [np.array([250 * k, 1 << 30, k % 3, 1], dtype=np.int64) for k in range(1, 41)]
    for k, name in enumerate(nodes.names[:12]):
        nodes.place(f"w{k}", [name, name], SHAPES[0] // 2)
        for amounts in shapes:
            for pods in (1, 8, 40):
                assert nodes.best_possible_level(pods, amounts, {}) == recount(nodes, pods, amounts, {}), (k, pods)


def test_best_tier_groups_by_labels_when_the_deepest_level_is_not_one_node_each() -> None:
    nodes_list = nodes_from_documents(build_node_documents(SPEC))
    coarse = NodeLedger(nodes_list, SPEC.levels[:2])  # zones and spines: several nodes per domain
    amounts = SHAPES[0]
    coarse.place("w", coarse.names[:3], amounts)
    for pods in (1, 8, 12, 24, 100):
        assert coarse.best_possible_level(pods, amounts, {}) == recount(coarse, pods, amounts, {}, levels=2)
    assert coarse.best_possible_level(1, amounts, {"no-such-label": "x"}) == -1


def test_best_tier_on_no_nodes_or_no_levels_is_minus_one() -> None:
    assert NodeLedger([], SPEC.levels).best_possible_level(1, SHAPES[0], {}) == -1
    flat = NodeLedger(nodes_from_documents(build_node_documents(SPEC)), ())
    assert flat.best_possible_level(1, SHAPES[0], {}) == -1


def test_place_reports_unknown_not_ready_and_over_capacity_nodes() -> None:
    nodes = ledger()
    eight = np.array([1000, 1 << 30, 8, 1], dtype=np.int64)
    assert nodes.place("a", ["no-such-node"], eight) == ["a: placed on unknown node no-such-node"]
    nodes.ready[3] = False
    problems = nodes.place("b", [nodes.names[0], nodes.names[3]], eight)
    assert problems == [f"b: pod placed on node {nodes.names[3]}, which is not Ready"]
    problems = nodes.place("c", [nodes.names[1], nodes.names[0]], eight)
    assert problems == [f"c: node {nodes.names[0]} over capacity for {RESOURCES[GPU]}: 16 requested, 8 allocatable"]
    nodes.release("c")
    nodes.release("b")
    assert not nodes.used.any()


def test_lowest_common_level() -> None:
    nodes = ledger()
    deepest = len(nodes.levels) - 1
    assert nodes.lowest_common_level([nodes.names[0]]) == deepest
    assert nodes.lowest_common_level([nodes.names[0], nodes.names[0]]) == deepest
    assert nodes.lowest_common_level([nodes.names[0], nodes.names[1]]) == deepest - 1  # one NVLink pair
    assert nodes.lowest_common_level([nodes.names[0], nodes.names[-1]]) == -1  # two zones


@pytest.mark.parametrize(
    "source",
    ['.metadata.annotations["a/b"]', ".status.phase", ".spec.x.y", ".status.conditions.[].type"],
)
def test_plain_path_queries_agree_with_the_general_walk(source: str) -> None:
    documents = [
        {"metadata": {"annotations": {"a/b": "5s"}}, "status": {"phase": "Running", "conditions": [{"type": "R"}]}},
        {"metadata": None, "status": {"phase": 3}, "spec": {"x": "scalar"}},
        {"metadata": {"annotations": "text"}, "status": None, "spec": {"x": None}},
        {"status": {"conditions": None}},
    ]
    for document in documents:
        try:
            general: list[object] | None = _walk([document], compile_query(source))  # type: ignore[arg-type]
        except Exception:
            general = None
        assert run_query(source, document) == general


def test_delay_text_reads_durations_and_moments() -> None:
    assert _delay_text("1500ms") == 1_500_000_000
    assert _delay_text("1h2m") == 3_720_000_000_000
    assert _delay_text("soon") is None
    moment = _delay_text("2024-01-01T00:00:10Z")
    assert isinstance(moment, datetime.datetime)
    assert moment == datetime.datetime(2024, 1, 1, 0, 0, 10, tzinfo=datetime.UTC)


def checker(borrowing_limit_share: float | None) -> InvariantChecker:
    queues = QueueSpec(teams=(TeamSpec("team-a", 0.5, borrowing_limit_share), TeamSpec("team-b", 0.5)))
    objects = [build_topology(SPEC.levels), *build_queues(queues, capacity_by_model(SPEC))]
    return InvariantChecker(objects, ledger())


def job(name: str, nodes: int, gpus_per_node: int = 8) -> JobSpec:
    return JobSpec(name, "team-a", 0.0, nodes, gpus_per_node, 60.0, cpu_milli=1000, memory_mib=1024)


def admit(check: InvariantChecker, spec: JobSpec, gpus: int | None = None, nodes: list[str] | None = None) -> None:
    flavor = flavor_name(SPEC.gpu_model)
    usage = {
        (flavor, "cpu"): spec.cpu_milli * spec.nodes,
        (flavor, "memory"): spec.memory_mib * 1024 * 1024 * spec.nodes,
        (flavor, GPU_RESOURCE): spec.gpus if gpus is None else gpus,
    }
    flavors = {"cpu": flavor, "memory": flavor, GPU_RESOURCE: flavor}
    placed = nodes if nodes is not None else check.nodes.names[: spec.nodes]
    check.admitted(spec.name, spec, "team-a", usage, flavors, {"trainer": spec.nodes}, placed, 1.0)


def test_checker_reports_quota_over_the_borrowing_limit_and_the_cohort() -> None:
    gpus = SPEC.node_count * SPEC.gpus_per_node
    names = checker(None).nodes.names
    limited = checker(borrowing_limit_share=0.125)  # nominal half the GPUs, ceiling five eighths
    ceiling_nodes = SPEC.node_count * 5 // 8
    admit(limited, job("fits", ceiling_nodes))  # exactly at the ceiling
    assert limited.violation_count == 0
    admit(limited, job("over", 1), nodes=[names[-1]])
    assert limited.violations == [
        f"t=1.000s over: ClusterQueue team-a uses {ceiling_nodes * 8 + 8} nvidia.com/gpu "
        f"of flavor gpu-h100, limit {gpus * 5 // 8}"
    ]
    limited.released("over")
    limited.released("fits")
    assert not any(limited.usage.values())
    assert not limited.nodes.used.any()

    unlimited = checker(borrowing_limit_share=None)  # may borrow the whole cohort: only the cohort bounds it
    admit(unlimited, job("whole", SPEC.node_count))
    assert unlimited.violation_count == 0
    admit(unlimited, job("more", 1), nodes=[names[0]])
    assert unlimited.violations[0].startswith("t=1.000s more: node ")  # node 0 overfilled first
    assert (
        f"cohort gpu-cluster uses {gpus + 8} nvidia.com/gpu of flavor gpu-h100, has {gpus}" in unlimited.violations[1]
    )


def test_checker_reports_partial_gangs_and_wrong_charges() -> None:
    check = checker(borrowing_limit_share=None)
    names = check.nodes.names
    admit(check, job("short", 4), nodes=names[:3])
    admit(check, job("cheap", 2), gpus=8, nodes=names[5:7])
    assert check.violations[0] == "t=1.000s short: 3 of 4 pods placed on the TAS flavor"
    assert check.violations[1].startswith("t=1.000s cheap: charged [")
    assert check.violation_count == 2
