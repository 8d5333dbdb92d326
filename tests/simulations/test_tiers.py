"""The incremental t* (BestTier) against a full recount, and the ledger's cheaper paths."""

from __future__ import annotations

import datetime
import random

import numpy as np
import pytest

from simulations.cluster import ClusterSpec, build_node_documents, nodes_from_documents
from simulations.invariants import GPU, RESOURCES, NodeLedger
from simulations.kwok import _delay_text
from simulations.kwok_query import _walk, compile_query, run_query
from simulations.tiers import BestTier

SPEC = ClusterSpec(zones=2, spines_per_zone=2, blocks_per_spine=3, nodes_per_block=4, nvlink_nodes=2)


def ledger() -> NodeLedger:
    return NodeLedger(nodes_from_documents(build_node_documents(SPEC)), SPEC.levels)


def recount(ledger: NodeLedger, pods: int, amounts: np.ndarray, eligible: np.ndarray) -> int:
    """t* the plain way: every node's slots from scratch, summed per domain with a dict."""
    slots = []
    for i in range(len(ledger.names)):
        free = ledger.allocatable[i] - ledger.used[i]
        fits = min(int(free[c]) // int(amounts[c]) for c in range(len(RESOURCES)) if amounts[c] > 0)
        slots.append(max(fits, 0) if eligible[i] and ledger.ready[i] else 0)
    for depth in range(len(ledger.levels) - 1, -1, -1):
        per_domain: dict[int, int] = {}
        for i, count in enumerate(slots):
            domain = int(ledger.domains[depth, i])
            per_domain[domain] = per_domain.get(domain, 0) + count
        if max(per_domain.values()) >= pods:
            return depth
    return -1


def test_best_tier_matches_a_full_recount_through_places_releases_and_failures() -> None:
    nodes = ledger()
    rng = random.Random(7)
    shapes = [
        np.array([8000, 64 << 30, 8, 1], dtype=np.int64),
        np.array([2000, 16 << 30, 2, 1], dtype=np.int64),
        np.array([500, 1 << 30, 0, 1], dtype=np.int64),
    ]
    everywhere = np.ones(len(nodes.names), dtype=bool)
    first_zone = np.array([labels.get(SPEC.levels[0]) == "zone-0" for labels in nodes.labels])
    assert 0 < first_zone.sum() < len(first_zone)
    placed: list[str] = []
    answers = set()
    for step in range(400):
        action = rng.random()
        if action < 0.5 or not placed:
            amounts = rng.choice(shapes)
            chosen = [rng.choice(nodes.names) for _ in range(rng.randint(1, 4))]
            nodes.place(f"w{step}", chosen, amounts)
            placed.append(f"w{step}")
        elif action < 0.85:
            nodes.release(placed.pop(rng.randrange(len(placed))))
        else:
            i = rng.randrange(len(nodes.names))
            nodes.ready[i] = not nodes.ready[i]  # the simulator flips Ready in place
        if rng.random() < 0.3:
            first_zone[rng.randrange(len(first_zone))] ^= True  # a mask changed in place is seen too
        for amounts in shapes:
            for mask in (everywhere, first_zone):
                pods = rng.randint(1, 20)
                expected = recount(nodes, pods, amounts, mask)
                assert nodes.best_possible_level(pods, amounts, mask) == expected, step
                answers.add(expected)
    assert len(answers) > 2  # the walk reached several tiers, not one answer throughout


def test_best_tier_recounts_everything_after_falling_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("simulations.tiers.MAX_PENDING_BATCHES", 2)
    nodes = ledger()
    amounts = np.array([8000, 64 << 30, 8, 1], dtype=np.int64)
    mask = np.ones(len(nodes.names), dtype=bool)
    assert nodes.best_possible_level(4, amounts, mask) == recount(nodes, 4, amounts, mask)
    for k, name in enumerate(nodes.names[:12]):
        nodes.place(f"w{k}", [name], amounts)
        nodes.best_possible_level(1, amounts * 0 + 1, mask)  # another shape keeps its cache current
    for pods in (1, 2, 4, 8, 40):
        assert nodes.best_possible_level(pods, amounts, mask) == recount(nodes, pods, amounts, mask)


def test_best_tier_on_no_nodes_is_minus_one() -> None:
    empty = np.zeros((0, 4), dtype=np.int64)
    tier = BestTier(empty, empty.copy(), np.zeros(0, dtype=bool), np.zeros((1, 0), np.int64), [None], [np.zeros(0)])
    assert tier.best_level(1, np.array([1, 1, 1, 1]), np.zeros(0, dtype=bool)) == -1


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
