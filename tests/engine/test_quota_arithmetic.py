"""Kueue's hierarchical quota arithmetic (pkg/cache/scheduler/resource_node.go), worked by hand.

The tree, for one (flavor, resource)::

    root (cohort, nominal 10)
    ├── mid (cohort, nominal 5, borrowingLimit 8, lendingLimit 3)
    │   ├── cq-a (nominal 6, borrowingLimit 4)
    │   └── cq-b (nominal 4, lendingLimit 1)
    └── cq-c (nominal 2)

Hand computation, following Kueue's definitions:
    guaranteed (localQuota) = subtree - lendingLimit where a lending limit is set, else 0
    cq-a: subtree 6, guaranteed 0
    cq-b: subtree 4, guaranteed 4 - 1 = 3
    mid:  subtree 5 + (6 - 0) + (4 - 3) = 12, guaranteed 12 - 3 = 9
    cq-c: subtree 2, guaranteed 0
    root: subtree 10 + (12 - 9) + (2 - 0) = 15
    potentialAvailable = guaranteed + min(parent's, subtree - guaranteed + borrowingLimit... )
    root 15; mid min(9 + 15, 12 + 8) = 20; cq-a min(0 + 20, 6 + 4) = 10; cq-b 3 + 20 = 23; cq-c 0 + 15 = 15
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.quota import QuotaNode, recompute_cohort_usage, recompute_subtree_quotas

FR = ("default", "cpu")


def _tree() -> dict[str, QuotaNode]:
    root = QuotaNode("root", True, nominal={FR: 10})
    mid = QuotaNode("mid", True, parent=root, nominal={FR: 5}, borrowing_limit={FR: 8}, lending_limit={FR: 3})
    cq_a = QuotaNode("cq-a", False, parent=mid, nominal={FR: 6}, borrowing_limit={FR: 4})
    cq_b = QuotaNode("cq-b", False, parent=mid, nominal={FR: 4}, lending_limit={FR: 1})
    cq_c = QuotaNode("cq-c", False, parent=root, nominal={FR: 2})
    root.children = [mid, cq_c]
    mid.children = [cq_a, cq_b]
    recompute_subtree_quotas(root)
    return {n.name: n for n in (root, mid, cq_a, cq_b, cq_c)}


@pytest.mark.parametrize(
    ("node", "subtree", "guaranteed"),
    [("cq-a", 6, 0), ("cq-b", 4, 3), ("mid", 12, 9), ("cq-c", 2, 0), ("root", 15, 0)],
)
def test_subtree_quota_and_guaranteed_local_quota(node: str, subtree: int, guaranteed: int) -> None:
    tree = _tree()
    assert tree[node].subtree.get(FR, 0) == subtree
    assert tree[node].guaranteed.get(FR, 0) == guaranteed


@pytest.mark.parametrize(
    ("node", "potential"),
    [("root", 15), ("mid", 20), ("cq-a", 10), ("cq-b", 23), ("cq-c", 15)],
    ids=[
        "root-is-subtree",
        "mid-capped-by-its-borrowing-limit",
        "cq-a-capped-by-its-borrowing-limit",
        "cq-b-keeps-its-guaranteed-part",
        "cq-c-reaches-what-mid-lends",
    ],
)
def test_potential_available_on_an_empty_tree(node: str, potential: int) -> None:
    tree = _tree()
    assert tree[node].potential_available(FR) == potential
    assert tree[node].available(FR) == potential, "with no usage, available equals potential"


def test_usage_bubbles_past_guaranteed_quota_and_available_follows() -> None:
    tree = _tree()
    tree["cq-a"].add_usage(FR, 10)
    # cq-a has no guaranteed part: all 10 go to mid; mid keeps 9 guaranteed, 1 reaches the root.
    assert [tree[n].usage.get(FR, 0) for n in ("cq-a", "mid", "root")] == [10, 10, 1]
    # cq-a: 0 local + min(mid 10, stored 6 - used 10 + limit 4 = 0) = 0
    assert tree["cq-a"].available(FR) == 0
    # mid: 0 local (9 guaranteed, 10 used) + min(root 15 - 1 = 14, stored 3 - used 1 + 8 = 10) = 10
    assert tree["mid"].available(FR) == 10
    # cq-b: its 3 guaranteed + whatever mid still offers (10)
    assert tree["cq-b"].available(FR) == 13
    # cq-c: the root's 15 less the 1 that left mid
    assert tree["cq-c"].available(FR) == 14
    assert tree["cq-a"].borrowed(FR) == 4
    assert tree["cq-a"].is_borrowing(FR)


def test_usage_within_guaranteed_quota_stays_in_the_subtree() -> None:
    tree = _tree()
    tree["cq-b"].add_usage(FR, 3)
    assert [tree[n].usage.get(FR, 0) for n in ("cq-b", "mid", "root")] == [3, 0, 0]
    assert tree["cq-c"].available(FR) == 15, "what cq-b keeps home was never lendable to cq-c"
    tree["cq-b"].add_usage(FR, 2)
    assert [tree[n].usage.get(FR, 0) for n in ("cq-b", "mid", "root")] == [5, 2, 0]


def test_remove_usage_undoes_add_usage() -> None:
    tree = _tree()
    for name, amount in [("cq-a", 10), ("cq-b", 5), ("cq-c", 2)]:
        tree[name].add_usage(FR, amount)
    for name, amount in [("cq-b", 5), ("cq-a", 10), ("cq-c", 2)]:
        tree[name].remove_usage(FR, amount)
    assert all(node.usage.get(FR, 0) == 0 for node in tree.values())


def test_recompute_cohort_usage_matches_incremental_accounting() -> None:
    tree = _tree()
    for name, amount in [("cq-a", 7), ("cq-b", 5), ("cq-c", 3)]:
        tree[name].add_usage(FR, amount)
    incremental = {name: node.usage.get(FR, 0) for name, node in tree.items()}
    recompute_cohort_usage(tree["root"])
    assert {name: node.usage.get(FR, 0) for name, node in tree.items()} == incremental


@pytest.mark.parametrize(
    ("node", "amount", "height", "may_reclaim"),
    [
        ("cq-a", 6, 0, True),
        ("cq-a", 7, 1, True),
        ("cq-b", 4, 0, True),
        ("cq-b", 5, 1, True),
        ("cq-b", 16, 2, False),
        ("cq-c", 3, 2, False),
    ],
    ids=[
        "within-nominal",
        "borrows-from-mid",
        "cq-b-within-nominal",
        "cq-b-from-mid",
        "cq-b-beyond-mid-from-root",
        "cq-c-from-root-is-the-root-height-not-one-step",
    ],
)
def test_borrow_height_is_the_lowest_subtree_that_fits(node: str, amount: int, height: int, may_reclaim: bool) -> None:
    # FindHeightOfLowestSubtreeThatFits: the height (distance to the furthest leaf) of the lowest
    # subtree whose quota holds the request: 0 = the ClusterQueue itself, mid = 1, root = 2 even
    # for cq-c, which sits directly under root; may-reclaim is True below the root.
    assert _tree()[node].lowest_fitting_subtree(FR, amount) == (height, may_reclaim)
    assert _tree()[node].borrow_height(FR, amount) == height


def test_a_cluster_queue_without_cohort_never_borrows() -> None:
    lone = QuotaNode("lone", False, nominal={FR: 4})
    recompute_subtree_quotas(lone)
    assert lone.lowest_fitting_subtree(FR, 10) == (0, False)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["cq-a", "cq-b", "cq-c"]), st.integers(0, 9)), max_size=8), st.integers(0, 30)
)
def test_fitting_answers_as_its_two_questions_do(usages: list[tuple[str, int]], amount: int) -> None:
    """``fitting`` is ``lowest_fitting_subtree`` and ``available`` in one pass, at any usage, for
    every node (leaves under the root and under a cohort with limits, cohorts, the root)."""
    tree = _tree()
    for name, used in usages:
        tree[name].add_usage(FR, used)
    for node in tree.values():
        assert node.fitting(FR, amount) == (*node.lowest_fitting_subtree(FR, amount), node.available(FR)), node.name
