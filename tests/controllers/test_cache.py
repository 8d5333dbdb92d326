"""The cluster cache: reads by kind, namespace, labels and owner; change handlers with old and new."""

from __future__ import annotations

from typing import Any

import pytest
from builders import node

from scheduler.controllers.cache import ClusterCache


def pod(name: str, namespace: str = "ns", owner: str | None = None, **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels, "resourceVersion": "1"}
    if owner is not None:
        metadata["ownerReferences"] = [{"uid": owner, "kind": "JobSet", "name": "x", "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}


def test_get_and_list_by_namespace_and_labels() -> None:
    cache = ClusterCache()
    cache.apply(pod("a", "one", app="x"))
    cache.apply(pod("b", "one", app="y"))
    cache.apply(pod("c", "two", app="x"))
    cache.apply(node("n1", ready=None))
    assert cache.get("Pod", "a", "one") is not None
    assert cache.get("Pod", "a", "two") is None
    assert cache.get("Node", "n1") is not None
    assert sorted(p["metadata"]["name"] for p in cache.list("Pod")) == ["a", "b", "c"]
    assert sorted(p["metadata"]["name"] for p in cache.list("Pod", "one")) == ["a", "b"]
    assert sorted(p["metadata"]["name"] for p in cache.list("Pod", labels={"app": "x"})) == ["a", "c"]
    assert cache.list("Pod", "two", labels={"app": "y"}) == []
    assert cache.list("Workload") == []


def test_owner_index_follows_updates_and_deletes() -> None:
    cache = ClusterCache()
    cache.apply(pod("a", owner="u1"))
    cache.apply(pod("b", owner="u1"))
    cache.apply(pod("c", owner="u2"))
    assert [p["metadata"]["name"] for p in cache.owned_by("Pod", "u1")] == ["a", "b"]
    cache.apply(pod("b", owner="u2"))  # re-owned
    assert [p["metadata"]["name"] for p in cache.owned_by("Pod", "u1")] == ["a"]
    assert [p["metadata"]["name"] for p in cache.owned_by("Pod", "u2")] == ["b", "c"]
    cache.delete("Pod", "c", "ns")
    assert [p["metadata"]["name"] for p in cache.owned_by("Pod", "u2")] == ["b"]
    assert cache.owned_by("Pod", "nobody") == []


def test_handlers_see_old_and_new_and_a_failing_handler_does_not_stop_the_others() -> None:
    cache = ClusterCache()
    seen: list[tuple[str | None, str | None]] = []

    def broken(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        raise RuntimeError("boom")

    def record(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        seen.append(
            (
                old["metadata"]["labels"].get("v") if old else None,
                new["metadata"]["labels"].get("v") if new else None,
            )
        )

    cache.on_change("Pod", broken)
    cache.on_change("Pod", record)
    cache.apply(pod("a", v="1"))
    cache.apply(pod("a", v="2"))
    cache.delete("Pod", "a", "ns")
    cache.delete("Pod", "a", "ns")  # already gone: no call
    cache.apply(node("n", ready=None))  # other kind: no call
    assert seen == [(None, "1"), ("1", "2"), ("2", None)]


def test_mark_loaded_sets_synced_and_bad_objects_are_refused() -> None:
    cache = ClusterCache()
    assert not cache.synced.is_set()
    cache.mark_loaded()
    assert cache.synced.is_set()
    with pytest.raises(ValueError, match="kind"):
        cache.apply({"metadata": {"name": "x"}})
    with pytest.raises(ValueError, match=r"metadata\.name"):
        cache.apply({"kind": "Pod", "metadata": {}})
