"""Incremental per-shape counts against a recount, after random reservations and releases on one
node and on many (hypothesis): the patched slots and domain sums never drift from the truth."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from topology_builders import GPU, flavor, grid, topology

from scheduler.topology import TopologyPlacer, capacity
from scheduler.topology.capacity import CapacityState
from scheduler.topology.leaf_index import SlotBits
from scheduler.topology.row_block import carry_moves
from scheduler.topology.shapes import PodShape

SHAPES = ({GPU: 1}, {GPU: 3}, {GPU: 8}, {"cpu": 4000}, {GPU: 2, "cpu": 1000}, {"example.com/fpga": 1})
changes = st.lists(
    st.tuples(st.sets(st.integers(0, 9), min_size=1, max_size=10), st.integers(-4, 6), st.integers(-2000, 8000)),
    min_size=1,
    max_size=25,
)


def assert_counts_are_a_recount(state: CapacityState, shape: PodShape) -> None:
    counts = state.counts(shape)
    mask = state.eligible(shape, ())
    assert np.array_equal(counts.slots, state._slots(shape, state.free, mask))
    for level, starts in enumerate(state.index.starts):
        assert np.array_equal(counts.caps[level], np.add.reduceat(counts.slots, starts)), level
        # the most a domain holds, as remembered for the state's version, is the counts' own
        assert counts.most(level, state.version) == int(counts.caps[level].max()), level
    assert_bits_are_a_scan(counts.leaf, counts.slots)


def assert_bits_are_a_scan(bits: SlotBits, slots: np.ndarray) -> None:
    """The slot bitsets answer what a scan of every node's slots answers."""
    values = slots.tolist()
    assert bits.most() == max([0, *values])
    for need in range(1, 10):
        fitting = [(value, node) for node, value in enumerate(values) if value >= need]
        assert bits.tightest(need) == (min(fitting)[1] if fitting else -1), need


def replay_and_scan(bits: SlotBits, slots: np.ndarray, changes: list[tuple[int, int, bool]]) -> None:
    """Set node ``node % len(slots)`` to ``value`` for each change, telling ``bits`` bit by bit or
    (``wholesale``) marking them stale, and check them against a scan after each."""
    for node, value, wholesale in changes:
        node %= len(slots)
        old = int(slots[node])
        if old == value:
            continue
        slots[node] = value
        if wholesale:
            bits.mark_stale()
        else:
            bits.move(node, old, value)
        assert_bits_are_a_scan(bits, slots)


@settings(max_examples=60, deadline=None)
@given(changes)
def test_counts_after_random_changes_equal_a_recount(steps: list[tuple[set[int], int, int]]) -> None:
    """Small changes go element by element (``_apply_run``), the rest through numpy."""
    replay_and_recount(steps)


@settings(max_examples=40, deadline=None)
@given(changes)
def test_counts_after_random_changes_through_numpy_equal_a_recount(steps: list[tuple[set[int], int, int]]) -> None:
    """The same changes with every multi-node one through the vectorized path."""
    with patch.object(capacity, "_RUN_NODES", 1):
        assert capacity._RUN_NODES == 1
        replay_and_recount(steps)


def replay_and_recount(steps: list[tuple[set[int], int, int]]) -> None:
    state = TopologyPlacer.build(topology(), flavor(), grid([[3, 4], [3]])).state
    shapes = [state.shape(requests) for requests in SHAPES]
    for shape in shapes:
        # cached rows, patched by every change below; asked once, so their bitsets are live and
        # the changes move bits (a bitset nobody asked about stays stale and moves nothing)
        state.counts(shape).leaf.most()
    gpu, cpu = state.resource_index[GPU], state.resource_index["cpu"]
    for picked, gpus, milli_cpu in steps:
        nodes = np.array(sorted(n for n in picked if n < state.index.size), dtype=np.int64)
        if not len(nodes):
            continue
        delta = np.zeros((len(state.resources), len(nodes)), dtype=np.int64)
        delta[gpu], delta[cpu] = gpus, milli_cpu
        version, grown = state.version, state.grown
        state.apply(nodes, delta)
        assert state.version != version
        # grown moves exactly when the change frees something (a release, a negative amount)
        assert (state.grown != grown) == bool((delta < 0).any())
    for shape in shapes:
        assert_counts_are_a_recount(state, shape)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=200),
    st.lists(st.tuples(st.integers(0, 199), st.integers(0, 9), st.booleans()), max_size=40),
)
def test_slot_bits_follow_moves_and_rebuilds(start: list[int], changes: list[tuple[int, int, bool]]) -> None:
    """Bit by bit or rebuilt after a wholesale change, the bitsets agree with a scan."""
    slots = np.array(start, dtype=np.int64)
    bits = SlotBits(slots)
    assert_bits_are_a_scan(bits, slots)
    replay_and_scan(bits, slots, changes)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 2100),
    st.lists(st.tuples(st.integers(0, 2099), st.integers(0, 9), st.booleans()), max_size=60),
)
def test_slot_bits_across_chunks(size: int, changes: list[tuple[int, int, bool]]) -> None:
    """Bitsets span several 512-node chunks: moves that empty a chunk, fill one, or cross the
    chunk boundaries still answer as a scan does (the nodes start mostly empty, so the lowest
    set bit often sits in a late chunk)."""
    slots = np.zeros(size, dtype=np.int64)
    slots[size - 1] = 3
    bits = SlotBits(slots)
    assert_bits_are_a_scan(bits, slots)
    replay_and_scan(bits, slots, changes)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 1600),
    st.lists(
        st.tuples(st.integers(0, 1599), st.integers(1, 300), st.integers(0, 8), st.booleans()), min_size=1, max_size=30
    ),
)
def test_gang_changes_move_bits_as_a_scan_sees_them(size: int, gangs: list[tuple[int, int, int, bool]]) -> None:
    """A gang's change (a run of neighbouring nodes, often all going from one count to another,
    sometimes across a 512-node chunk boundary) is carried into the bitsets run by run, and the
    bitsets still answer as a scan of the slots does."""
    slots = np.zeros(size, dtype=np.int64)
    slots[::7] = 8
    bits = SlotBits(slots)
    bits.most()  # built: the changes below move bits rather than mark them stale
    for start, length, value, every_other in gangs:
        start %= size
        positions = np.arange(start, min(size, start + length), 2 if every_other else 1, dtype=np.int64)
        old = slots[positions][None, :].copy()
        fresh = np.full_like(old, value)
        fresh[0, ::3] = (value + 1) % 9  # a few nodes of the run end on another count
        slots[positions] = fresh[0]
        carry_moves([bits], positions, old, fresh, fresh - old)
        assert_bits_are_a_scan(bits, slots)
