"""A gang that takes a whole domain skips the child-by-child descent and lands on the same nodes.

``Distributor.distribute`` takes every node of a domain whose capacity equals what is left to
place in one step (issue 17: the 2,048-pod gang's tail). The descent it replaces is still what
runs with a slice level; a slice level at the nodes with slices of one pod counts exactly as no
slice level does, so it gives the reference answer here.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from topology_builders import GPU, flavor, grid, topology

from scheduler.topology import GangPlacement, PodSetRequest, TopologyPlacer
from scheduler.topology.distribution import Picked, PodSetLevels

clusters = st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=4), min_size=1, max_size=3)


def _loaded(shape: list[list[int]], busy: list[int]) -> TopologyPlacer:
    placer = TopologyPlacer.build(topology(), flavor(), grid(shape))
    for position, used in enumerate(busy[: placer.index.size]):
        if used:
            bg = PodSetRequest("bg", used, {GPU: 1})
            placer.reserve(GangPlacement("gpu", (placer.describe_nodes(bg, np.full(used, position)),)))
    return placer


def _spread(placer: TopologyPlacer, level: int, domain: int, need: int, levels: PodSetLevels) -> list[int]:
    counts = placer.state.counts(placer.state.shape({GPU: 2}))
    picked = Picked(counts.slots)
    placer.distributor.distribute(counts, level, domain, need, levels, picked)
    return picked.expand().tolist()


@settings(max_examples=60, deadline=None)
@given(
    shape=clusters,
    busy=st.lists(st.sampled_from([0, 0, 1, 2, 4, 7, 8]), min_size=48, max_size=48),
    share=st.floats(0.0, 1.0),
)
def test_whole_domains_land_where_the_descent_would(shape: list[list[int]], busy: list[int], share: float) -> None:
    placer = _loaded(shape, busy)
    last = placer.index.depth - 1
    plain = PodSetLevels(0, False, None, 1)
    reference = PodSetLevels(0, False, last, 1)  # no shortcut, same arithmetic
    counts = placer.state.counts(placer.state.shape({GPU: 2}))
    whole_domains = 0
    for level in range(last):
        for domain, cap in enumerate(counts.caps[level].tolist()):
            for need in {cap, int(cap * share)}:  # the whole domain, and part of it
                if need <= 0:
                    continue
                got = _spread(placer, level, domain, need, plain)
                assert got == _spread(placer, level, domain, need, reference)
                assert len(got) == need
                whole_domains += need == cap
    assert whole_domains == sum(int((c > 0).sum()) for c in counts.caps[:last])


def test_a_whole_domain_takes_every_node_with_room_in_topology_order() -> None:
    placer = _loaded([[2, 2]], [8, 3, 0, 6])  # host slots for 2-GPU pods: 0, 2, 4, 1
    counts = placer.state.counts(placer.state.shape({GPU: 2}))
    assert counts.caps[2].tolist() == [2, 5]  # the two blocks (level 0 is the flavor, 1 the zone)
    assert _spread(placer, 0, 0, 7, PodSetLevels(0, False, None, 1)) == [1, 1, 2, 2, 2, 2, 3]
