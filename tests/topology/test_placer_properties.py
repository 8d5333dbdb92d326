"""The placer against brute force on small random topologies (hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st
from topology_builders import BLOCK, GPU, ZONE, flavor, grid, topology

from scheduler.topology import GangPlacement, GangRequest, PlacementFailure, PodSetRequest, TopologyPlacer

# a cluster: zones of blocks of hosts; every host has 4 GPUs and some background GPUs in use
clusters = st.lists(st.lists(st.integers(1, 2), min_size=1, max_size=2), min_size=1, max_size=2)


def _loaded(shape: list[list[int]], busy: list[int]) -> TopologyPlacer:
    nodes = grid(shape)
    for n in nodes:
        n.status.allocatable[GPU] = type(n.status.allocatable[GPU])("4")
    placer = TopologyPlacer.build(topology(), flavor(), nodes)
    for position, used in enumerate(busy[: placer.index.size]):
        if used:
            bg = PodSetRequest("bg", used, {GPU: 1})
            placer.reserve(GangPlacement("gpu", (placer.describe_nodes(bg, np.full(used, position)),)))
    return placer


def _brute_force(placer: TopologyPlacer, slots: list[int], pods: int) -> tuple[int, int] | None:
    """Every way to put ``pods`` on nodes: the deepest common level, then the fewest children."""
    best: tuple[int, int] | None = None
    for counts in itertools.product(*(range(s + 1) for s in slots)):
        if sum(counts) != pods:
            continue
        used = np.array([i for i, c in enumerate(counts) if c], dtype=np.int64)
        level, _, spanned = placer.lowest_common_domain(used)
        if best is None or (level, -spanned) > (best[0], -best[1]):
            best = (level, spanned)
    return best


@settings(max_examples=60, deadline=None)
@given(
    shape=clusters,
    busy=st.lists(st.sampled_from([0, 0, 0, 1, 2, 4]), min_size=8, max_size=8),
    pods=st.integers(1, 8),
    gpus=st.sampled_from([2, 4]),  # at most 2 pods per 4-GPU host keeps the brute force small
    required=st.sampled_from([None, ZONE, BLOCK]),
)
def test_tier_and_domain_count_match_brute_force(
    shape: list[list[int]], busy: list[int], pods: int, gpus: int, required: str | None
) -> None:
    placer = _loaded(shape, busy)
    free = placer.state.free[placer.state.resource_index[GPU]]
    slots = [int(f) // gpus for f in free]
    optimum = _brute_force(placer, slots, pods)
    result = placer.place(GangRequest.of(PodSetRequest("w", pods, {GPU: gpus}, required_level=required)))
    required_index = placer.index.level_index(required) if required else 0
    if optimum is None or optimum[0] < (required_index or 0):
        assert isinstance(result, PlacementFailure)
        assert result.reason
        event("no placement")
        return
    event(f"placed at internal level {optimum[0]}")
    assert isinstance(result, GangPlacement)
    placed = result.pod_sets[0]
    assert len(placed.nodes) == pods
    assert placer.index.level_index(placed.level or "") == optimum[0] or (placed.level is None and optimum[0] == 0)
    assert placed.spanned == optimum[1]


gangs = st.lists(
    st.tuples(st.integers(1, 5), st.sampled_from([1, 2, 4]), st.sampled_from([None, BLOCK])),
    min_size=1,
    max_size=3,
)


@settings(max_examples=40, deadline=None)
@given(shape=clusters, steps=st.lists(st.tuples(gangs, st.booleans()), min_size=1, max_size=8))
def test_no_node_overcommitted_and_all_or_nothing(
    shape: list[list[int]], steps: list[tuple[list[tuple[int, int, str | None]], bool]]
) -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid(shape))
    row = placer.state.resource_index[GPU]
    held: list[GangPlacement] = []
    for gang, release_first in steps:
        if release_first and held:
            placer.release(held.pop(0))
        before = placer.state.free.copy()
        request = GangRequest.of(
            *(PodSetRequest(f"ps{i}", n, {GPU: g}, required_level=lv) for i, (n, g, lv) in enumerate(gang))
        )
        result = placer.place(request)
        assert np.array_equal(placer.state.free, before), "place must not change the state"
        if isinstance(result, GangPlacement):
            assert [len(p.nodes) for p in result.pod_sets] == [n for n, _, _ in gang]
            placer.reserve(result)
            held.append(result)
        # every node's use is exactly the pods of the gangs it holds, never above allocatable
        expected = np.zeros(placer.index.size, dtype=np.int64)
        for placement in held:
            for ps in placement.pod_sets:
                for name in ps.nodes:
                    expected[placer.index.position[name]] += ps.requests[GPU]
        assert np.array_equal(placer.state.used[row], expected)
        assert (placer.state.used[row] <= placer.state.alloc[row]).all()
        # cached per-shape counts agree with a recount from scratch
        for gpus in (1, 2, 4):
            shape_key = placer.state.shape({GPU: gpus})
            counts = placer.state.counts(shape_key)
            assert np.array_equal(counts.slots, np.maximum(placer.state.free[row], 0) // gpus)
            for level, starts in enumerate(placer.index.starts):
                assert np.array_equal(counts.caps[level], np.add.reduceat(counts.slots, starts))
    for placement in held:
        placer.release(placement)
    assert not placer.state.used[row].any()


small_gangs = st.lists(
    st.tuples(st.integers(1, 3), st.sampled_from([1, 2]), st.sampled_from([None, BLOCK])),
    min_size=1,
    max_size=2,
)


@settings(max_examples=100, deadline=None)
@given(
    shape=clusters,
    busy=st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=8, max_size=8),
    gang=small_gangs,
    filled=st.lists(st.integers(0, 7), min_size=1, max_size=6),
)
def test_fits_answers_as_place_does_and_its_room_vouches_for_the_fit(
    shape: list[list[int]], busy: list[int], gang: list[tuple[int, int, str | None]], filled: list[int]
) -> None:
    """``fits`` (a preemption search's check) says what ``place`` says; while it fits, taking
    room on nodes outside the room it names leaves the gang fitting."""
    placer = _loaded(shape, busy)
    request = GangRequest.of(
        *(PodSetRequest(f"ps{i}", n, {GPU: g}, required_level=lv) for i, (n, g, lv) in enumerate(gang))
    )
    room = placer.fits(request)
    assert (room is None) == isinstance(placer.place(request), PlacementFailure)
    if room is None:
        event("does not fit")
        return
    start, end = room
    assert 0 <= start < end <= placer.index.size
    for position in filled:  # fill whole nodes outside the room
        if position < placer.index.size and not start <= position < end:
            left = int(placer.state.free[placer.state.resource_index[GPU], position])
            if left > 0:
                bg = PodSetRequest("bg", left, {GPU: 1})
                placer.reserve(GangPlacement("gpu", (placer.describe_nodes(bg, np.full(left, position)),)))
                event("room taken outside")
    assert placer.fits(request) is not None
    assert isinstance(placer.place(request), GangPlacement)
