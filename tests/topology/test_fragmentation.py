"""The fragmentation measure (FGD, ATC'23) both trainyard's placer and the FGD baseline read."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.topology.fragmentation import WHOLE, ShapeMix, accelerator_row, expected_fragmentation, least_growth

# resources: cpu (cores), gpu (whole GPUs)
CPU, GPU_ROW = 0, 1


def _mix(*shapes: tuple[int, int, int], pods: list[float] | None = None) -> ShapeMix:
    """Shapes as (cores, GPUs, share in thousandths)."""
    amounts = np.array([[cores, gpus] for cores, gpus, _ in shapes], dtype=np.int64).reshape(len(shapes), 2)
    share = np.array([s for _, _, s in shapes], dtype=np.int64)
    gpus = np.array([g for _, g, _ in shapes], dtype=np.int64)
    return ShapeMix(amounts, share, gpus, np.array(pods or [1.0] * len(shapes), dtype=np.float64))


def _free(*nodes: tuple[int, int]) -> np.ndarray:
    return np.array([[cores for cores, _ in nodes], [gpus for _, gpus in nodes]], dtype=np.int64)


@pytest.mark.parametrize(
    ("node", "eligible", "expected"),
    [
        pytest.param((16, 4), True, 0, id="whole-gpus-fitting-shape-leaves-no-fragment"),
        pytest.param((16, 1), True, 1000, id="too-few-gpus-every-free-gpu-is-fragmented"),
        pytest.param((2, 4), True, 4000, id="too-little-cpu-strands-the-gpus"),
        pytest.param((16, 4), False, 4000, id="a-node-the-shape-may-not-use"),
    ],
)
def test_whole_gpus_a_shape_that_fits_leaves_no_fragment_one_that_does_not_strands_all(
    node: tuple[int, int], eligible: bool, expected: int
) -> None:
    mix = _mix((4, 2, WHOLE))
    got = expected_fragmentation(mix, _free(node), np.array([[eligible]]), GPU_ROW)
    assert got.tolist() == [expected]


def test_shared_gpus_count_the_gpus_too_full_for_the_share() -> None:
    devices = np.array([[1000, 300, 600, -1]], dtype=np.int64)  # a 3-GPU node
    free = _free((16, 1))  # the GPU row is not read where GPUs are shared
    half = _mix((1, 1, 500))
    assert expected_fragmentation(half, free, np.ones((1, 1), dtype=bool), GPU_ROW, devices).tolist() == [300]
    two_whole = _mix((1, 2, WHOLE))  # one untouched GPU only: every free thousandth is stranded for it
    assert expected_fragmentation(two_whole, free, np.ones((1, 1), dtype=bool), GPU_ROW, devices).tolist() == [1900]


def test_shapes_weigh_the_same_unless_weighed_by_their_pods() -> None:
    mix = _mix((4, 1, WHOLE), (64, 1, WHOLE), pods=[3.0, 1.0])  # the second fits no node with 16 cores
    free = _free((16, 2))
    eligible = np.ones((2, 1), dtype=bool)
    assert expected_fragmentation(mix, free, eligible, GPU_ROW).tolist() == [1000]  # half of 2,000
    assert expected_fragmentation(mix.by_pods(), free, eligible, GPU_ROW).tolist() == [500]  # a quarter


def test_shapes_without_gpus_are_left_out() -> None:
    mix = _mix((4, 0, WHOLE), (4, 1, WHOLE))
    assert len(mix) == 1
    assert mix.weights.tolist() == [1.0]


def test_least_growth_breaks_ties_by_tightest_then_topology_order() -> None:
    growth = np.array([5.0, -1.0, -1.0, -1.0000001])
    held = np.array([1, 4, 2, 2])
    positions = np.array([0, 1, 3, 2])
    assert least_growth(growth, held, positions) == 3  # -1 ties (rounded); fewest held; then position 2


def test_the_accelerator_row_is_the_one_asked_for_else_the_first() -> None:
    resources = ("cpu", "example.com/tpu", "memory", "nvidia.com/gpu", "pods")
    assert accelerator_row(resources, {"nvidia.com/gpu": 1}) == 3
    assert accelerator_row(resources, {"cpu": 1000}) == 1
    assert accelerator_row(("cpu", "memory", "pods"), {"cpu": 1}) is None


@settings(max_examples=60, deadline=None)
@given(
    cores=st.lists(st.integers(0, 32), min_size=1, max_size=6),
    devices=st.lists(st.lists(st.integers(-1, 1000), min_size=4, max_size=4), min_size=6, max_size=6),
    shapes=st.lists(st.tuples(st.integers(0, 16), st.integers(0, 3), st.integers(1, 1000)), min_size=1, max_size=5),
)
def test_fragmentation_never_exceeds_what_is_free(
    cores: list[int], devices: list[list[int]], shapes: list[tuple[int, int, int]]
) -> None:
    nodes = len(cores)
    held = np.array(devices[:nodes], dtype=np.int64)
    free = _free(*[(c, 0) for c in cores])
    mix = _mix(*[(c, g, s if g == 1 else WHOLE) for c, g, s in shapes])
    got = expected_fragmentation(mix, free, np.ones((len(mix), nodes), dtype=bool), GPU_ROW, held)
    idle = np.maximum(held, 0).sum(axis=1)
    assert np.all(got >= -1e-9)
    assert np.all(got <= idle + 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(st.tuples(st.integers(-2, 24), st.integers(0, 8)), min_size=1, max_size=5),
    shapes=st.lists(st.tuples(st.integers(0, 16), st.integers(1, 8)), min_size=1, max_size=6),
    taken=st.tuples(st.integers(0, 8), st.integers(0, 4)),
    eligible_bits=st.integers(0, 2**30),
)
def test_the_placers_integer_growth_orders_nodes_as_the_measure_does(
    nodes: list[tuple[int, int]], shapes: list[tuple[int, int]], taken: tuple[int, int], eligible_bits: int
) -> None:
    """``WholeGpuTable.growth`` is shapes × the growth of ``expected_fragmentation`` in GPUs."""
    from scheduler.topology.whole_growth import WholeGpuTable

    mix = _mix(*[(cores, gpus, WHOLE) for cores, gpus in shapes])
    eligible = np.array(
        [[bool(eligible_bits >> (s * len(nodes) + n) & 1) for n in range(len(nodes))] for s in range(len(shapes))]
    )
    kinds = {tuple(bool(v) for v in eligible[:, n]) for n in range(len(nodes))}
    kind_of = {kind: k for k, kind in enumerate(sorted(kinds))}
    table = WholeGpuTable(
        [[cores, gpus] for cores, gpus in shapes],
        [kind_of[tuple(bool(v) for v in eligible[:, n])] for n in range(len(nodes))],
        [list(kind) for kind in sorted(kinds)],
    )
    free = _free(*nodes)
    after = free - np.array([[taken[0]], [taken[1]]])
    expected = expected_fragmentation(mix, after, eligible, GPU_ROW) - expected_fragmentation(
        mix, free, eligible, GPU_ROW
    )
    got = [table.growth(n, free[:, n].tolist(), list(taken), GPU_ROW) for n in range(len(nodes))]
    assert np.allclose(np.array(got) * WHOLE / len(shapes), expected)
