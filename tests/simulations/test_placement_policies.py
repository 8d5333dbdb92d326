"""The placement policies trainyard is compared with, each through the one PlacementPolicy interface."""

from __future__ import annotations

import numpy as np
import pytest

from runtimes.k8s.core import Node
from scheduler.api.kueue import ResourceFlavor, Topology
from scheduler.topology import GangPlacement, GangRequest, PlacementFailure, PodSetRequest, TopologyPlacer
from scheduler.topology.fragmentation import WHOLE, ShapeMix
from scheduler.topology.policy import PlacementView
from simulations.placement_policies import POLICIES, TRAINYARD, kueue_tas, placement_policy

BLOCK = "network.topology.nvidia.com/block"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"


def _node(name: str, block: str, gpus: int = 8, cores: int = 64) -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": {BLOCK: block, HOST: name}},
            "status": {"allocatable": {GPU: str(gpus), "cpu": str(cores)}},
        }
    )


def _placer(nodes: list[Node], policy_name: str | None = None) -> TopologyPlacer:
    topology = Topology.model_validate(
        {"metadata": {"name": "t"}, "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": HOST}]}}
    )
    flavor = ResourceFlavor.model_validate({"metadata": {"name": "f"}, "spec": {"topologyName": "t"}})
    policy = None if policy_name is None else placement_policy(policy_name, np.random.default_rng(3))
    return TopologyPlacer.build(topology, flavor, nodes, policy)


def _view(placer: TopologyPlacer, slots: list[int], pods: int, **extra: object) -> PlacementView:
    state = placer.state
    return PlacementView(
        placer.index,
        np.array(slots, dtype=np.int64),
        state.free,
        state.alloc,
        state.resources,
        state.amounts_vector({GPU: 1}),
        pods,
        gpu_row=state.resource_index[GPU],
        **extra,  # type: ignore[arg-type]
    )


def _one_block(rooms: list[int]) -> TopologyPlacer:
    return _placer([_node(f"h{i}", "b0", gpus=room) for i, room in enumerate(rooms)])


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        pytest.param("best-fit", [0, 0, 0, 1, 1, 1, 3], id="bestfit-largest-first-then-the-node-with-exactly-one"),
        pytest.param("least-free", [0, 0, 0, 1, 2, 2, 3], id="leastfree-smallest-first-1-2-3-and-1-of-3"),
    ],
)
def test_kueue_tas_on_the_kep_example(order: str, expected: list[int]) -> None:
    """KEP-2724's example: nodes with room 3, 3, 2, 1 and 7 pods."""
    placer = _one_block([3, 3, 2, 1])
    slots = np.array([3, 3, 2, 1], dtype=np.int64)
    host_level = placer.index.depth - 1
    nodes = kueue_tas(placer.index, slots, 7, host_level, order=order)  # type: ignore[arg-type]
    assert nodes is not None
    assert sorted(nodes.tolist()) == expected


def test_kueue_tas_required_level_fails_instead_of_going_up() -> None:
    placer = _placer([_node("a", "b0"), _node("b", "b1")])
    slots = np.array([8, 8], dtype=np.int64)
    block = placer.index.level_index(BLOCK)
    assert block is not None
    assert kueue_tas(placer.index, slots, 12, block, required=True) is None
    preferred = kueue_tas(placer.index, slots, 12, block)
    assert preferred is not None
    assert len(preferred) == 12


@pytest.mark.parametrize(
    ("policy", "slots", "expected"),
    [
        pytest.param("first-fit", [0, 2, 5, 1], [1], id="first-fit-the-first-node-with-room"),
        pytest.param("best-fit", [4, 2, 5, 1], [3], id="best-fit-the-fewest-free-gpus"),
        pytest.param("kueue-bestfit", [4, 2, 5, 1], [3], id="kueue-bestfit-the-tightest-node"),
        pytest.param("kueue-leastfree", [4, 2, 5, 1], [3], id="kueue-leastfree-the-least-free-node"),
    ],
)
def test_one_pod_goes_where_each_policy_says(policy: str, slots: list[int], expected: list[int]) -> None:
    placer = _one_block(slots)
    chosen = placement_policy(policy, np.random.default_rng(1))
    assert chosen is not None
    answer = chosen.choose(_view(placer, slots, 1))
    assert answer is not None
    assert answer.nodes.tolist() == expected


def test_dot_product_prefers_the_node_whose_free_resources_the_pod_aligns_with_least() -> None:
    # same GPUs free; h1 has less CPU free: its free vector and the pod's product is smaller
    placer = _placer([_node("h0", "b0", cores=64), _node("h1", "b0", cores=16)])
    view = _view(placer, [8, 8], 1)
    view.per_pod = placer.state.amounts_vector({GPU: 1, "cpu": 4000})
    chosen = placement_policy("dot-product", np.random.default_rng(1))
    assert chosen is not None
    answer = chosen.choose(view)
    assert answer is not None
    assert answer.nodes.tolist() == [1]


def test_fgd_takes_the_node_whose_fragmentation_grows_least() -> None:
    placer = _one_block([8, 3])
    gpu_row = placer.state.resource_index[GPU]
    amounts = np.zeros((1, len(placer.state.resources)), dtype=np.int64)
    amounts[0, gpu_row] = 4  # recent pods asked for 4 GPUs: taking one from h1 (3 free) strands nothing new
    mix = ShapeMix(amounts, np.array([WHOLE]), np.array([4]), np.array([1.0]))
    view = _view(placer, [8, 3], 1, mix=mix, mix_eligible=lambda nodes: np.ones((1, len(nodes)), dtype=bool))
    chosen = placement_policy("fgd", np.random.default_rng(1))
    assert chosen is not None
    answer = chosen.choose(view)
    assert answer is not None
    assert answer.nodes.tolist() == [1]


def test_random_draws_among_the_nodes_with_room_from_its_seed() -> None:
    placer = _one_block([2, 0, 2, 2])
    draws = []
    for seed in (1, 1, 2):
        chosen = placement_policy("random", np.random.default_rng(seed))
        assert chosen is not None
        answer = chosen.choose(_view(placer, [2, 0, 2, 2], 3))
        assert answer is not None
        assert 1 not in answer.nodes.tolist()
        draws.append(answer.nodes.tolist())
    assert draws[0] == draws[1]


def test_a_required_block_keeps_a_policy_inside_one_block() -> None:
    nodes = [_node("a0", "b0", gpus=2), _node("b0", "b1"), _node("b1", "b1")]
    placer = _placer(nodes, "first-fit")
    request = GangRequest.of(PodSetRequest("w", 12, {GPU: 1}, required_level=BLOCK))
    placement = placer.place(request)
    assert isinstance(placement, GangPlacement)
    assert set(placement.pod_sets[0].nodes) == {"b0", "b1"}


def test_the_placer_asks_the_policy_and_names_it_when_it_finds_nothing() -> None:
    placer = _placer([_node("a", "b0", gpus=2)], "first-fit")
    failed = placer.place(GangRequest.of(PodSetRequest("w", 4, {GPU: 1}, required_level=HOST)))
    assert isinstance(failed, PlacementFailure)
    assert "placement policy first-fit found no nodes" in failed.reason


def test_every_policy_name_makes_a_policy_and_trainyard_is_the_placers_own() -> None:
    assert placement_policy(TRAINYARD, np.random.default_rng(1)) is None
    for name in POLICIES[1:]:
        policy = placement_policy(name, np.random.default_rng(1))
        assert policy is not None
        assert policy.name == name
