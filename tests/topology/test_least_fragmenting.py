"""trainyard's one-node choice: the node that leaves the cluster least fragmented for recent shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topology_builders import BLOCK, GPU, HOST, flavor, node, topology

from scheduler.topology import GangPlacement, GangRequest, PodSetRequest, TopologyPlacer
from scheduler.topology.leaf_index import SlotBits
from scheduler.topology.shape_history import ShapeHistory
from scheduler.topology.shapes import pod_shape


def _pod(gpus: int, cores: int, name: str = "pod", count: int = 1) -> GangRequest:
    requests = {GPU: gpus, "cpu": cores * 1000}
    return GangRequest.of(PodSetRequest(name, count, requests, required_level=HOST))


def _node_of(placement: GangPlacement | object) -> str:
    assert isinstance(placement, GangPlacement), placement
    return placement.pod_sets[0].nodes[0]


def test_a_small_pod_leaves_whole_the_only_node_a_large_recent_shape_fits() -> None:
    """Both nodes hold the one-GPU pod equally (the old rule took the first in topology order and
    left the 120-core pod nowhere to go); only "a-large" holds a pod of 8 GPUs and 120 cores,
    which the placer was asked for before: the small pod goes to "b-small"."""
    nodes = [node("a-large", "z0", "b0", cpu="128"), node("b-small", "z0", "b0", cpu="96")]
    placer = TopologyPlacer.build(topology(), flavor(), nodes)
    wide = _pod(8, 120, "wide")
    assert _node_of(placer.place(wide)) == "a-large"  # asked for (placed nowhere yet): now a recent shape
    small = placer.place(_pod(1, 4, "small"))
    assert _node_of(small) == "b-small"
    assert isinstance(small, GangPlacement)
    placer.reserve(small)
    assert _node_of(placer.place(wide)) == "a-large"


def test_without_a_difference_in_fragmentation_the_tightest_node_wins_as_before() -> None:
    nodes = [node("a", "z0", "b0"), node("b", "z0", "b0"), node("c", "z0", "b0")]
    placer = TopologyPlacer.build(topology(), flavor(), nodes)
    first = placer.place(_pod(4, 4))
    assert isinstance(first, GangPlacement)
    placer.reserve(first)
    assert _node_of(first) == "a"  # all empty: topology order
    assert _node_of(placer.place(_pod(4, 4))) == "a"  # the fullest that still holds it


def test_a_pod_of_whole_nodes_fills_them_whatever_the_mix() -> None:
    nodes = [node(f"n{i}", "z0", "b0") for i in range(4)]
    placer = TopologyPlacer.build(topology(), flavor(), nodes)
    placer.place(_pod(1, 1))
    placement = placer.place(_pod(8, 8, count=1))
    assert _node_of(placement) == "n0"


def test_the_history_remembers_the_last_distinct_shapes_and_their_pods() -> None:
    history = ShapeHistory(limit=2)
    resources = {"cpu": 0, GPU: 1}
    one, two, three = (pod_shape(resources, {GPU: g, "cpu": 1000}) for g in (1, 2, 3))
    history.record(one, (), 4)
    history.record(two, (), 1)
    history.record(one, (), 2)  # one is the most recent now
    history.record(three, (), 1)  # two is forgotten
    mix = history.mix(gpu_row=1)
    assert sorted(mix.gpus.tolist()) == [1, 3]
    assert sorted(mix.pods.tolist()) == [1.0, 6.0]
    assert mix.weights.tolist() == [0.5, 0.5]


@settings(max_examples=40, deadline=None)
@given(
    slots=st.lists(st.integers(0, 5), min_size=1, max_size=1200),
    need=st.integers(1, 5),
    per_class=st.integers(0, 3),
    scan=st.integers(1, 40),
)
def test_candidates_are_the_first_nodes_of_each_kind(slots: list[int], need: int, per_class: int, scan: int) -> None:
    array = np.array(slots, dtype=np.int64)
    bits = SlotBits(array)
    classes = [i % 3 for i in range(len(slots))]
    assert bits.holding(need) == int((array >= need).sum())
    nodes, held = bits.candidates(need, classes, per_class, scan, len(set(classes)))
    expected: list[tuple[int, int]] = []
    for count in sorted({s for s in slots if s >= need}):
        taken: dict[int, int] = {}
        members = [i for i, s in enumerate(slots) if s == count][:scan]
        for i in members:
            if per_class <= 0 or taken.get(classes[i], 0) < per_class:
                taken[classes[i]] = taken.get(classes[i], 0) + 1
                expected.append((i, count))
    assert sorted(zip(nodes, held, strict=True)) == sorted(expected)


@pytest.mark.parametrize("pods", [1, 3])
def test_a_pod_set_on_one_node_lands_where_it_fits(pods: int) -> None:
    nodes = [node("a", "z0", "b0", gpus=2), node("b", "z0", "b1", gpus=8)]
    placer = TopologyPlacer.build(topology(), flavor(), nodes)
    placement = placer.place(_pod(1, 1, count=pods))
    assert isinstance(placement, GangPlacement)
    assert set(placement.pod_sets[0].nodes) == ({"a"} if pods == 1 else {"b"})


def test_a_gangs_partly_used_node_moves_off_the_only_node_a_large_recent_shape_fits() -> None:
    """12 one-GPU pods in one block take two nodes: a whole one and half of another. The half goes
    to "c" rather than "b", the only node that holds the 120-core shape asked for before; the
    gang still spans two nodes of one block (its t* and m*)."""
    nodes = [node("a", "z0", "b0", cpu="96"), node("b", "z0", "b0", cpu="128"), node("c", "z0", "b0", cpu="96")]
    placer = TopologyPlacer.build(topology(), flavor(), nodes)
    placer.place(_pod(8, 120, "wide"))
    gang = GangRequest.of(PodSetRequest("workers", 12, {GPU: 1, "cpu": 2000}, required_level=BLOCK))
    placement = placer.place(gang)
    assert isinstance(placement, GangPlacement)
    workers = placement.pod_sets[0]
    assert sorted(set(workers.nodes)) == ["a", "c"]
    assert workers.nodes.count("a") == 8
    assert (workers.level, workers.spanned) == (BLOCK, 2)
