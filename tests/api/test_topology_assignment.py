"""Kueue's compressed topologyAssignment: the cases of Kueue's own codec tests
(pkg/util/tas, internal <-> v1beta2), the API's documented examples, v1beta1 ``domains``,
hostname-only storage, malformed input, and a round-trip property."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.topology_assignment import (
    HOSTNAME_LABEL,
    TopologyAssignment,
    TopologyAssignmentError,
    TopologyDomain,
    decode_topology_assignment,
    encode_topology_assignment,
    stored_levels,
)

Domains = list[tuple[list[str], int]]


def _level(short: dict[str, Any]) -> dict[str, Any]:
    """One level's values in Kueue v0.17's spelling, from the tables' shorthand: ``universalValue``
    is ``{universal: ...}``; ``prefix``/``suffix``/``roots`` go under ``individual``."""
    level: dict[str, Any] = {}
    if "universalValue" in short:
        level["universal"] = short["universalValue"]
    individual = {k: v for k, v in short.items() if k in ("prefix", "suffix", "roots")}
    if individual:
        level["individual"] = individual
    return level


def _slice(count: int, values: list[dict[str, Any]], pods: int | list[int] | None) -> dict[str, Any]:
    """A slice in Kueue v0.17's spelling: one pod count for every domain, or one per domain."""
    slice_: dict[str, Any] = {"domainCount": count, "valuesPerLevel": [_level(v) for v in values]}
    if isinstance(pods, int):
        slice_["podCounts"] = {"universal": pods}
    elif pods is not None:
        slice_["podCounts"] = {"individual": pods}
    return slice_


# (id, levels, domains, v1beta2 form): Kueue encodes these exactly so and decodes them back.
BOTH_WAYS: list[tuple[str, list[str], Domains, dict[str, Any]]] = [
    ("empty", ["a", "b"], [], {"levels": ["a", "b"], "slices": []}),
    (
        "one domain is universal everywhere",
        ["a", "b"],
        [(["a1", "b1"], 1)],
        {"levels": ["a", "b"], "slices": [_slice(1, [{"universalValue": "a1"}, {"universalValue": "b1"}], 1)]},
    ),
    (
        "same counts, common prefix per level",
        ["a", "b"],
        [(["a1", "b1"], 1), (["a2", "b2"], 1)],
        {
            "levels": ["a", "b"],
            "slices": [
                _slice(
                    2,
                    [
                        {"prefix": "a", "roots": ["1", "2"]},
                        {"prefix": "b", "roots": ["1", "2"]},
                    ],
                    1,
                )
            ],
        },
    ),
    (
        "different counts, common prefix and suffix",
        ["a", "b"],
        [(["p.a1.s", "p.b1.s"], 1), (["p.a2.s", "p.b2.s"], 2)],
        {
            "levels": ["a", "b"],
            "slices": [
                _slice(
                    2,
                    [
                        {"prefix": "p.a", "suffix": ".s", "roots": ["1", "2"]},
                        {"prefix": "p.b", "suffix": ".s", "roots": ["1", "2"]},
                    ],
                    [1, 2],
                )
            ],
        },
    ),
    (
        "universal value at one level",
        ["a", "b"],
        [(["a1", "x"], 1), (["a1", "y"], 2)],
        {
            "levels": ["a", "b"],
            "slices": [_slice(2, [{"universalValue": "a1"}, {"roots": ["x", "y"]}], [1, 2])],
        },
    ),
    (
        "shrinking prefix",
        ["a"],
        [(["a123"], 1), (["a12"], 1), (["a1"], 1), (["a13"], 1)],
        {
            "levels": ["a"],
            "slices": [_slice(4, [{"prefix": "a1", "roots": ["23", "2", "", "3"]}], 1)],
        },
    ),
    (
        "shrinking suffix",
        ["a"],
        [(["123b"], 1), (["23b"], 1), (["3b"], 1), (["13b"], 1)],
        {
            "levels": ["a"],
            "slices": [_slice(4, [{"suffix": "3b", "roots": ["12", "2", "", "1"]}], 1)],
        },
    ),
    (
        "prefix and suffix overlap partially: the prefix gives way",
        ["a"],
        [(["abacacada"], 1), (["abacada"], 1)],
        {
            "levels": ["a"],
            "slices": [_slice(2, [{"prefix": "ab", "suffix": "acada", "roots": ["ac", ""]}], 1)],
        },
    ),
    (
        "prefix and suffix overlap fully, shrinking strings: no prefix at all",
        ["a"],
        [(["ababa"], 1), (["aba"], 1)],
        {
            "levels": ["a"],
            "slices": [_slice(2, [{"suffix": "aba", "roots": ["ab", ""]}], 1)],
        },
    ),
    (
        "prefix and suffix overlap fully, growing strings",
        ["a"],
        [(["aba"], 1), (["ababa"], 1)],
        {
            "levels": ["a"],
            "slices": [_slice(2, [{"suffix": "aba", "roots": ["", "ab"]}], 1)],
        },
    ),
]


@pytest.mark.parametrize(("levels", "domains", "wire"), [c[1:] for c in BOTH_WAYS], ids=[c[0] for c in BOTH_WAYS])
def test_encodes_as_kueue_does(levels: list[str], domains: Domains, wire: dict[str, Any]) -> None:
    assert encode_topology_assignment(levels, domains) == wire


@pytest.mark.parametrize(("levels", "domains", "wire"), [c[1:] for c in BOTH_WAYS], ids=[c[0] for c in BOTH_WAYS])
def test_decodes_kueue_form(levels: list[str], domains: Domains, wire: dict[str, Any]) -> None:
    decoded = decode_topology_assignment(wire)
    assert decoded.levels == levels
    assert [(d.values, d.count) for d in decoded.domains] == domains


def test_decodes_several_slices_with_prefixes_suffixes_and_universal_values() -> None:
    # Kueue's one-way case: a form its encoder does not write but every reader must accept.
    wire = {
        "levels": ["a", "b"],
        "slices": [
            _slice(
                2,
                [{"universalValue": "a1"}, {"prefix": "b", "suffix": "-s", "roots": ["1", "2"]}],
                [2, 3],
            ),
            _slice(
                3,
                [
                    {"prefix": "a", "roots": ["2", "3", "4"]},
                    {"suffix": "-t", "roots": ["x", "y", "z"]},
                ],
                5,
            ),
            _slice(2, [{"universalValue": "a10"}, {"universalValue": "b10"}], 10),
        ],
    }
    decoded = decode_topology_assignment(wire)
    assert [(d.values, d.count) for d in decoded.domains] == [
        (["a1", "b1-s"], 2),
        (["a1", "b2-s"], 3),
        (["a2", "x-t"], 5),
        (["a3", "y-t"], 5),
        (["a4", "z-t"], 5),
        (["a10", "b10"], 10),
        (["a10", "b10"], 10),
    ]
    assert decoded.pod_count == 40


def test_documented_hostname_example_maps_pods_to_nodes() -> None:
    # Example 4 of Kueue's PodSetAssignment.topologyAssignment documentation, in the v1beta2 shape.
    wire = {
        "levels": [HOSTNAME_LABEL],
        "slices": [
            _slice(4, [{"prefix": "block-1-rack-1-node-", "roots": ["1", "2", "3", "4"]}], 1),
            _slice(2, [{"prefix": "block-1-rack-2-node-", "roots": ["1", "2"]}], 1),
        ],
    }
    nodes = decode_topology_assignment(wire).pod_nodes()
    assert nodes == [f"block-1-rack-1-node-{i}" for i in range(1, 5)] + [
        "block-1-rack-2-node-1",
        "block-1-rack-2-node-2",
    ]
    # Our encoder writes Example 3: one slice with the longest common prefix.
    assert encode_topology_assignment([HOSTNAME_LABEL], [([n], 1) for n in nodes]) == {
        "levels": [HOSTNAME_LABEL],
        "slices": [
            _slice(
                6,
                [
                    {
                        "prefix": "block-1-rack-",
                        "roots": ["1-node-1", "1-node-2", "1-node-3", "1-node-4", "2-node-1", "2-node-2"],
                    }
                ],
                1,
            )
        ],
    }


def test_reads_v1beta1_domains() -> None:
    wire = {
        "levels": ["cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"],
        "domains": [{"values": ["block-1", "rack-1"], "count": 4}, {"values": ["block-1", "rack-2"], "count": 2}],
    }
    decoded = decode_topology_assignment(wire)
    assert decoded.domains == [TopologyDomain(["block-1", "rack-1"], 4), TopologyDomain(["block-1", "rack-2"], 2)]
    assert decoded.node_selector_for_rank(5) == {
        "cloud.provider.com/topology-block": "block-1",
        "cloud.provider.com/topology-rack": "rack-2",
    }
    assert decoded.node_selector_for_rank(6) is None
    with pytest.raises(TopologyAssignmentError, match="does not end with"):
        decoded.pod_nodes()


def test_pod_nodes_repeat_each_host_by_its_count_in_rank_order() -> None:
    assignment = TopologyAssignment([HOSTNAME_LABEL], [TopologyDomain(["n2"], 2), TopologyDomain(["n1"], 1)])
    assert assignment.pod_nodes() == ["n2", "n2", "n1"]
    assert decode_topology_assignment(assignment.to_dict()) == assignment


def test_stored_levels_keep_only_the_hostname_when_it_is_the_lowest_level() -> None:
    levels, domains = stored_levels(
        ["block", "rack", HOSTNAME_LABEL], [(["b1", "r1", "n1"], 2), (["b1", "r2", "n7"], 1)]
    )
    assert levels == [HOSTNAME_LABEL]
    assert domains == [(["n1"], 2), (["n7"], 1)]
    assert stored_levels(["block", "rack"], [(["b1", "r1"], 3)]) == (["block", "rack"], [(["b1", "r1"], 3)])


@pytest.mark.parametrize(
    ("wire", "field"),
    [
        ({"levels": []}, "levels"),
        (
            {"levels": ["a"], "slices": [_slice(2, [{"universalValue": "x"}], [1])]},
            r"slices\[0\].podCounts",
        ),
        ({"levels": ["a"], "slices": [_slice(1, [], 1)]}, r"slices\[0\].valuesPerLevel"),
        (
            {
                "levels": ["a"],
                "slices": [_slice(1, [{"universalValue": "x", "roots": ["x"]}], 1)],
            },
            "exactly one",
        ),
        ({"levels": ["a"], "slices": [_slice(2, [{"roots": ["x"]}], 1)]}, "roots"),
        ({"levels": ["a"], "slices": [_slice(0, [{"universalValue": "x"}], 1)]}, "domainCount"),
        ({"levels": ["a"], "slices": [_slice(1, [{"universalValue": "x"}], None)]}, "podCounts"),
        ({"levels": ["a"], "domains": [{"values": ["x", "y"], "count": 1}]}, r"domains\[0\].values"),
        ({"levels": ["a"], "domains": [{"values": ["x"], "count": -1}]}, r"domains\[0\].count"),
        ({"levels": ["a"], "domains": {"values": ["x"]}}, "domains must be a list, got dict"),
        ({"levels": ["a"], "slices": "x"}, "slices must be a list, got str"),
        ({"levels": ["a"], "domains": [{"values": ["x"], "count": 1}, "x"]}, r"domains\[1\] must be an object"),
        ({"levels": ["a"], "slices": [None]}, r"slices\[0\] must be an object"),
    ],
    ids=[
        "no levels",
        "short counts",
        "no level values",
        "both roots and universalValue",
        "short roots",
        "zero domains",
        "no counts",
        "values per level",
        "negative count",
        "domains not a list",
        "slices not a list",
        "a domain not an object",
        "a slice not an object",
    ],
)
def test_malformed_input_names_the_field(wire: dict[str, Any], field: str) -> None:
    with pytest.raises(TopologyAssignmentError, match=field):
        decode_topology_assignment(wire)


def test_encoder_rejects_domains_that_do_not_match_the_levels() -> None:
    with pytest.raises(TopologyAssignmentError, match="2 values for 1 levels"):
        encode_topology_assignment(["a"], [(["x", "y"], 1)])


_label_values = st.text(alphabet="abc-1.", min_size=0, max_size=6)


@settings(max_examples=150)
@given(
    st.integers(min_value=1, max_value=3).flatmap(
        lambda n: st.lists(
            st.tuples(st.lists(_label_values, min_size=n, max_size=n), st.integers(min_value=1, max_value=4)),
            max_size=8,
        )
    )
)
def test_round_trip(domains: list[tuple[list[str], int]]) -> None:
    levels = [f"level-{i}" for i in range(len(domains[0][0]))] if domains else ["level-0"]
    decoded = decode_topology_assignment(encode_topology_assignment(levels, domains))
    assert [(d.values, d.count) for d in decoded.domains] == domains
