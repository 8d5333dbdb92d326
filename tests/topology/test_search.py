"""``fewest_children`` against a brute force: for every candidate domain, the fewest of its
children whose capacities hold ``need`` (the sorting path, and the path for children that hold
at most one unit each, the whole-node gang's case)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.topology.search import fewest_children

NONE = np.iinfo(np.int64).max


def brute_force(caps: list[int], need: int) -> int:
    total = 0
    for count, cap in enumerate(sorted(caps, reverse=True), start=1):
        total += cap
        if total >= need:
            return count
    return int(NONE)


domains = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=6), min_size=1, max_size=5)
unit_domains = st.lists(st.lists(st.integers(0, 1), min_size=1, max_size=6), min_size=1, max_size=5)


def check(children: list[list[int]], need: int) -> None:
    flat = np.array([cap for domain in children for cap in domain], dtype=np.int64)
    lengths = np.array([len(domain) for domain in children], dtype=np.int64)
    hi = np.cumsum(lengths)
    got = fewest_children(flat, hi - lengths, hi, need)
    assert got.tolist() == [brute_force(domain, need) for domain in children]


@given(domains, st.integers(1, 12))
def test_fewest_children_match_brute_force(children: list[list[int]], need: int) -> None:
    check(children, need)


@given(unit_domains, st.integers(1, 7))
def test_children_of_one_unit_each_match_brute_force(children: list[list[int]], need: int) -> None:
    check(children, need)
