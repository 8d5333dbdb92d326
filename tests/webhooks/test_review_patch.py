"""The mutating webhook's JSON patch: applied to the original, it gives the mutated object."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from webhooks.review import Verdict

_keys = st.sampled_from(["a", "b", "kueue.x-k8s.io/queue-name", "x~y", "", "0"])
_leaves = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, width=16) | st.text(max_size=3)
_json = st.recursive(
    _leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4), max_leaves=12
)
_objects = st.dictionaries(_keys, _json, max_size=5)


def _patched(original: dict[str, Any], mutated: dict[str, Any]) -> Any:
    verdict = Verdict.mutate(original, mutated)
    assert verdict.allowed
    return jsonpatch.apply_patch(copy.deepcopy(original), verdict.patch or [])


@settings(max_examples=300, deadline=None)
@given(_objects, _objects)
def test_patch_turns_original_into_mutated(original: dict[str, Any], mutated: dict[str, Any]) -> None:
    result = _patched(original, mutated)
    assert result == mutated
    assert _typed(result) == _typed(mutated)  # 1 == 1.0 == True in Python: the types must come through too


def _typed(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def test_shared_subtrees_are_not_walked_and_keys_are_escaped() -> None:
    spec = {"trainer": {"numNodes": 2}, "big": list(range(1000))}
    original = {"metadata": {"labels": {}}, "spec": spec}
    mutated = {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "default"}}, "spec": spec}
    verdict = Verdict.mutate(original, mutated)
    assert verdict.patch == [{"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"}]


def test_no_change_is_no_patch() -> None:
    document = {"spec": {"suspend": True}}
    assert Verdict.mutate(document, copy.deepcopy(document)).patch is None
    # a bool replacing an equal int is a change
    assert Verdict.mutate({"n": 1}, {"n": True}).patch == [{"op": "replace", "path": "/n", "value": True}]
