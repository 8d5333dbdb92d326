"""Incremental capacity bookkeeping: batched moves of reserved gangs, and the per-shape rows."""

from __future__ import annotations

import numpy as np

from scheduler.topology import GangPlacement, GangRequest, PodSetRequest, TopologyPlacer
from tests.topology.topology_builders import BLOCK, GPU, flavor, grid, topology


def _placer() -> TopologyPlacer:
    return TopologyPlacer.build(topology(), flavor(), grid([[4, 4], [4]]))


def _reserve(placer: TopologyPlacer, pods: int, gpus: int) -> GangPlacement:
    placement = placer.place(GangRequest.of(PodSetRequest("w", pods, {GPU: gpus}, required_level=BLOCK)))
    assert isinstance(placement, GangPlacement), placement
    placer.reserve(placement)
    return placement


def _recount(placer: TopologyPlacer, gpus: int) -> None:
    """The cached counts of a shape equal a recount from the free capacity."""
    state = placer.state
    row = state.resource_index[GPU]
    counts = state.counts(state.shape({GPU: gpus}))
    assert np.array_equal(counts.slots, np.maximum(state.free[row], 0) // gpus)
    for level, starts in enumerate(placer.index.starts):
        assert np.array_equal(counts.caps[level], np.add.reduceat(counts.slots, starts))


def test_shift_usage_moves_gangs_out_and_back_exactly() -> None:
    placer = _placer()
    for gpus in (1, 8):
        placer.state.counts(placer.state.shape({GPU: gpus}))
    gangs = [_reserve(placer, 3, 8) for _ in range(3)] + [_reserve(placer, 1, 2)]  # one free node per block
    used, free = placer.state.used.copy(), placer.state.free.copy()
    whole_node = PodSetRequest("big", 4, {GPU: 8}, required_level=BLOCK)
    assert not isinstance(placer.place(GangRequest.of(whole_node)), GangPlacement)

    placer.shift_usage(gangs, -1)
    assert not placer.state.used.any()
    assert isinstance(placer.place(GangRequest.of(whole_node)), GangPlacement)
    _recount(placer, 8)
    placer.shift_usage(gangs, 1)

    assert np.array_equal(placer.state.used, used)
    assert np.array_equal(placer.state.free, free)
    for gpus in (1, 8):
        _recount(placer, gpus)
    for gang in gangs:
        placer.release(gang)
    assert not placer.state.used.any()


def test_more_shapes_than_cached_rows_keep_exact_counts() -> None:
    placer = _placer()
    state = placer.state
    # 40 shapes (GPU amount × distinct cpu requests) cycle through the 32 cached rows
    shapes = [state.shape({GPU: 1 + i % 4, "cpu": 1000 * (1 + i)}) for i in range(40)]
    held = []
    for i, shape in enumerate(shapes):
        state.counts(shape)
        if i % 7 == 0:
            held.append(_reserve(placer, 2, 1 + i % 4))
    for placement in held[::2]:
        placer.release(placement)
    for shape in shapes[-8:] + shapes[:4]:
        counts = state.counts(shape)
        fit = np.min(
            [np.maximum(state.free[r], 0) // a for r, a in enumerate(shape.amounts) if a > 0],
            axis=0,
        )
        assert np.array_equal(counts.slots, fit)
        for level, starts in enumerate(placer.index.starts):
            assert np.array_equal(counts.caps[level], np.add.reduceat(counts.slots, starts))


def test_reserve_after_a_node_change_recounts_the_cached_shapes() -> None:
    placer = _placer()
    _recount(placer, 2)
    gang = _reserve(placer, 2, 4)
    failed = grid([[4, 4], [4]])[0]
    placer.update_node(failed.model_copy(update={"spec": failed.spec.model_copy(update={"unschedulable": True})}))
    counts = placer.state.counts(placer.state.shape({GPU: 2}))
    assert counts.slots[placer.index.position[failed.name]] == 0
    for level, starts in enumerate(placer.index.starts):
        assert np.array_equal(counts.caps[level], np.add.reduceat(counts.slots, starts))
    placer.release(gang)
    assert not placer.state.used.any()


def test_one_node_changes_keep_every_cached_shape_exact() -> None:
    """Reservations and releases of one pod take the one-node path; the counts stay a recount."""
    placer = _placer()
    state = placer.state
    cordoned = grid([[4, 4], [4]])[5]
    placer.update_node(cordoned.model_copy(update={"spec": cordoned.spec.model_copy(update={"unschedulable": True})}))
    for gpus in (1, 2, 8):
        state.counts(state.shape({GPU: gpus}))
    held = [_reserve(placer, 1, gpus) for gpus in (1, 2, 1, 8, 2, 1, 1)]
    for gpus in (1, 2, 8):
        counts = state.counts(state.shape({GPU: gpus}))
        assert counts.slots[placer.index.position[cordoned.name]] == 0
        expected = np.maximum(state.free[state.resource_index[GPU]], 0) // gpus
        expected[placer.index.position[cordoned.name]] = 0
        assert np.array_equal(counts.slots, expected)
        for level, starts in enumerate(placer.index.starts):
            assert np.array_equal(counts.caps[level], np.add.reduceat(counts.slots, starts))
    for placement in held:
        placer.release(placement)
    assert not state.used.any()
    whole_nodes = state.counts(state.shape({GPU: 8})).slots
    assert int(whole_nodes.sum()) == placer.index.size - 1  # every node but the cordoned one, again


def test_grown_moves_only_when_capacity_may_grow_and_versions_come_back_after_a_round_trip() -> None:
    """A failure to place one pod set holds while ``grown`` stays (capacity only shrank); a
    preemption search that takes gangs out and puts every one back may hand the versions back."""
    placer = _placer()
    whole_block = GangRequest.of(PodSetRequest("big", 5, {GPU: 8}, required_level=BLOCK))
    assert not isinstance(placer.place(whole_block), GangPlacement)  # blocks hold 4 nodes
    grown = placer.grown
    gang = _reserve(placer, 2, 8)
    assert placer.grown == grown  # reserving only takes: the failure above still holds
    before = placer.versions()
    placer.shift_usage([gang], -1)
    assert placer.grown != grown
    placer.shift_usage([gang], 1)
    assert placer.versions() != before
    placer.restore_versions(before)
    assert placer.versions() == before
    placer.release(gang)
    assert placer.grown != grown  # a release frees nodes: remembered failures are asked again


def test_amounts_list_equals_amounts_vector() -> None:
    """The placer's plain-int amounts (least fragmenting's hot path) read requests as the array does."""
    state = _placer().state
    for requests in ({GPU: 2}, {GPU: 8, "cpu": 4000}, {}, {"pods": 3, GPU: 1}, {"example.com/none": 5}):
        assert state.amounts_list(requests) == state.amounts_vector(requests).tolist()
