"""Graph building, TAS annotations, slices, leaders, unconstrained packing, node failures."""

from __future__ import annotations

import pytest
from topology_builders import BLOCK, GPU, HOST, ZONE, flavor, grid, node, topology

from runtimes.k8s.core import PodTemplateSpec, Toleration
from scheduler.api.kueue import (
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY,
)
from scheduler.topology import (
    NVLINK_CLIQUE_LABEL,
    GangPlacement,
    GangRequest,
    PlacementFailure,
    PodSetRequest,
    TopologyPlacer,
    pod_set_request_from_template,
)


def _gang(*pod_sets: PodSetRequest) -> GangRequest:
    return GangRequest.of(*pod_sets)


def test_unusable_nodes_hold_no_capacity_and_flavor_labels_select() -> None:
    nodes = [
        node("ok", "z0", "b0"),
        node("notready", "z0", "b0", ready=False),
        node("cordoned", "z0", "b0", unschedulable=True),
        node("tainted", "z0", "b0", taints=[{"key": "gpu-maint", "effect": "NoSchedule"}]),
        node("soft", "z0", "b0", taints=[{"key": "x", "effect": "PreferNoSchedule"}]),
        node("other-pool", "z0", "b0", labels={"pool": "cpu"}),
    ]
    placer = TopologyPlacer.build(topology(), flavor(), nodes)
    assert "other-pool" in placer.graph.excluded
    assert "other-pool" not in placer.index.position
    assert placer.free_capacity().free == 16  # ok + soft
    result = placer.place(_gang(PodSetRequest("w", 2, {GPU: 8})))
    assert isinstance(result, GangPlacement)
    assert sorted(result.pod_sets[0].nodes) == ["ok", "soft"]
    assert isinstance(placer.place(_gang(PodSetRequest("w", 3, {GPU: 8}))), PlacementFailure)
    tolerant = PodSetRequest("w", 3, {GPU: 8}, tolerations=(Toleration(key="gpu-maint", operator="Exists"),))
    assert isinstance(placer.place(_gang(tolerant)), GangPlacement)
    # flavor tolerations count too
    placer = TopologyPlacer.build(topology(), flavor(tolerations=[{"key": "gpu-maint", "operator": "Exists"}]), nodes)
    assert isinstance(placer.place(_gang(PodSetRequest("w", 3, {GPU: 8}))), GangPlacement)


def test_update_node_is_incremental_and_remove_node_frees_nothing_twice() -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid([[2, 2]]))
    placement = placer.place(_gang(PodSetRequest("w", 2, {GPU: 8}, required_level=BLOCK)))
    assert isinstance(placement, GangPlacement)
    placer.reserve(placement)
    placer.update_node(node("n-0-1-0", "z0", "b01", ready=False))
    assert placer.free_capacity().free == 8
    placer.update_node(node("n-0-1-0", "z0", "b01"))
    assert placer.free_capacity().free == 16
    placer.remove_node("n-0-1-1")
    assert placer.free_capacity().free == 8
    placer.update_node(node("n-1-0-0", "z1", "b10"))  # a new node in a new zone
    assert placer.free_capacity().free == 16
    placer.release(placement)
    assert placer.free_capacity().free == 32


def test_required_level_failure_says_why() -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid([[3, 2], [2]]))
    result = placer.place(_gang(PodSetRequest("w", 4, {GPU: 8}, required_level=BLOCK)))
    assert isinstance(result, PlacementFailure)
    assert "needs 4 pods × 8 nvidia.com/gpu in one network.topology.nvidia.com/block" in result.reason
    assert "the largest block has room for 3 pods" in result.reason
    preferred = placer.place(_gang(PodSetRequest("w", 4, {GPU: 8}, preferred_level=BLOCK)))
    assert isinstance(preferred, GangPlacement)
    assert preferred.pod_sets[0].level == ZONE
    unknown = placer.place(_gang(PodSetRequest("w", 1, {GPU: 8}, required_level="rack")))
    assert isinstance(unknown, PlacementFailure)
    assert "use one of" in unknown.reason


def test_tightest_domain_keeps_large_domains_whole_and_ranks_follow_topology() -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid([[4, 2, 3]]))
    result = placer.place(_gang(PodSetRequest("w", 2, {GPU: 8})))
    assert isinstance(result, GangPlacement)
    assert result.pod_sets[0].domain == ("z0", "b01")
    result = placer.place(_gang(PodSetRequest("w", 6, {GPU: 8})))
    assert isinstance(result, GangPlacement)
    nodes = result.pod_sets[0].nodes
    assert list(nodes) == sorted(nodes, key=lambda n: placer.index.position[n])
    assert result.pod_sets[0].spanned == 2  # 4 + 2 (not 4 + 3)
    assignment = result.pod_sets[0].to_topology_assignment()
    assert assignment.levels == [HOST]
    assert sum(d.count for d in assignment.domains) == 6


def test_slices_stay_inside_one_domain_of_the_slice_level() -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid([[3, 3, 2]]))
    request = PodSetRequest("w", 4, {GPU: 8}, slice_level=BLOCK, slice_size=2)
    result = placer.place(_gang(request))
    assert isinstance(result, GangPlacement)
    blocks = [placer.index.node_values[n][1] for n in result.pod_sets[0].nodes]
    assert blocks[0] == blocks[1]
    assert blocks[2] == blocks[3]
    too_big = placer.place(_gang(PodSetRequest("w", 8, {GPU: 8}, slice_level=BLOCK, slice_size=4)))
    assert isinstance(too_big, PlacementFailure)
    assert "each slice in one" in too_big.reason


def test_leader_is_placed_with_its_workers() -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid([[2, 4]]))
    leader = PodSetRequest("leader", 1, {"cpu": 4000}, required_level=BLOCK, group="g")
    workers = PodSetRequest("workers", 4, {GPU: 8}, required_level=BLOCK, group="g")
    result = placer.place(_gang(leader, workers))
    assert isinstance(result, GangPlacement)
    lead, work = result.pod_set("leader"), result.pod_set("workers")
    assert work.domain == ("z0", "b01")
    assert placer.index.node_values[lead.nodes[0]][:2] == work.domain
    assert len(work.nodes) == 4
    assert len(lead.nodes) == 1


def test_all_or_nothing_across_pod_sets() -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid([[2]]))
    before = placer.state.free.copy()
    result = placer.place(_gang(PodSetRequest("a", 2, {GPU: 4}), PodSetRequest("b", 2, {GPU: 4})))
    assert isinstance(result, GangPlacement)
    result = placer.place(_gang(PodSetRequest("a", 2, {GPU: 8}), PodSetRequest("b", 1, {GPU: 8})))
    assert isinstance(result, PlacementFailure)
    assert (placer.state.free == before).all()


def test_unconstrained_packs_fullest_nodes_first() -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid([[3]]))
    half = placer.place(_gang(PodSetRequest("bg", 1, {GPU: 5})))
    assert isinstance(half, GangPlacement)
    placer.reserve(half)
    result = placer.place(_gang(PodSetRequest("w", 3, {GPU: 1}, unconstrained=True)))
    assert isinstance(result, GangPlacement)
    assert set(result.pod_sets[0].nodes) == set(half.pod_sets[0].nodes)


def test_node_failure_moves_only_its_pods_inside_the_domain_or_requeues() -> None:
    placer = TopologyPlacer.build(topology(), flavor(), grid([[3], [4]]))  # the 3-host block is tighter
    placement = placer.place(_gang(PodSetRequest("w", 2, {GPU: 8}, required_level=BLOCK)))
    assert isinstance(placement, GangPlacement)
    placer.reserve(placement)
    failed = placement.pod_sets[0].nodes[0]
    moved = placer.replace_failed_node(placement, failed)
    assert isinstance(moved, GangPlacement)
    assert failed not in moved.pod_sets[0].nodes
    assert moved.pod_sets[0].nodes[1] == placement.pod_sets[0].nodes[1]
    assert moved.pod_sets[0].domain == placement.pod_sets[0].domain
    placer.release(placement)
    placer.reserve(moved)
    placer.update_node(node(failed, "z0", "b00", ready=False))
    again = placer.replace_failed_node(moved, moved.pod_sets[0].nodes[0])
    assert isinstance(again, PlacementFailure)
    assert again.requeue
    assert "requeued" in again.reason


def test_nvlink_cliques_form_a_level_a_gang_can_require() -> None:
    nodes = [node(f"n{i}", "z0", "b0", gpus=4, labels={NVLINK_CLIQUE_LABEL: f"rack{i // 3}"}) for i in range(6)]
    placer = TopologyPlacer.build(topology(), flavor(), nodes)
    assert NVLINK_CLIQUE_LABEL in placer.levels
    result = placer.place(_gang(PodSetRequest("w", 3, {GPU: 4}, required_level=NVLINK_CLIQUE_LABEL)))
    assert isinstance(result, GangPlacement)
    cliques = {placer.index.node_values[n][2] for n in result.pod_sets[0].nodes}
    assert len(cliques) == 1
    assert result.pod_sets[0].to_topology_assignment().levels == [HOST]
    assert isinstance(
        placer.place(_gang(PodSetRequest("w", 4, {GPU: 4}, required_level=NVLINK_CLIQUE_LABEL))),
        PlacementFailure,
    )


def _template(annotations: dict[str, str]) -> PodTemplateSpec:
    return PodTemplateSpec.model_validate(
        {
            "metadata": {"annotations": annotations},
            "spec": {"containers": [{"name": "t", "resources": {"requests": {GPU: "8", "cpu": "500m"}}}]},
        }
    )


def test_annotations_are_parsed() -> None:
    request = pod_set_request_from_template(
        "w", 8, _template({PODSET_SLICE_REQUIRED_TOPOLOGY: BLOCK, PODSET_SLICE_SIZE: "4"})
    )
    assert (request.slice_level, request.slice_size, request.requests) == (BLOCK, 4, {GPU: 8, "cpu": 500})
    assert pod_set_request_from_template("w", 1, _template({PODSET_REQUIRED_TOPOLOGY: ZONE})).required_level == ZONE
    assert pod_set_request_from_template("w", 1, _template({PODSET_UNCONSTRAINED_TOPOLOGY: "true"})).unconstrained


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({PODSET_REQUIRED_TOPOLOGY: ZONE, PODSET_PREFERRED_TOPOLOGY: BLOCK}, "exclude each other"),
        ({PODSET_UNCONSTRAINED_TOPOLOGY: "yes"}, '"true" or "false"'),
        ({PODSET_SLICE_SIZE: "2"}, "must be set together"),
        ({PODSET_SLICE_REQUIRED_TOPOLOGY: BLOCK, PODSET_SLICE_SIZE: "zero"}, "positive integer"),
        ({PODSET_SLICE_REQUIRED_TOPOLOGY: BLOCK, PODSET_SLICE_SIZE: "3"}, "not a multiple"),
        ({PODSET_REQUIRED_TOPOLOGY: ""}, "is empty"),
    ],
    ids=["required-and-preferred", "bad-boolean", "size-without-level", "bad-size", "uneven", "empty"],
)
def test_bad_annotations_name_the_annotation(annotations: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=r"kueue\.x-k8s\.io/podset") as raised:
        pod_set_request_from_template("w", 8, _template(annotations))
    assert message in str(raised.value)
