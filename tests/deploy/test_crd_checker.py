"""The structural-schema checker and the null pruning the CRD tests rely on: each finds what it should
(a checker that found nothing would pass every CRD)."""

from __future__ import annotations

from typing import Any

from crd_schemas import drop_nulls, structural_problems


def test_nulls_are_dropped_where_the_api_server_drops_them() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
            "b": {"type": "string", "nullable": True},
        },
    }
    assert drop_nulls(schema, {"spec": None, "b": None}) == {"b": None}
    assert drop_nulls(schema, {"spec": {"a": None}}) == {"spec": {}}


def test_structural_checker_finds_each_violation() -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"type": "object", "properties": {"a": {}}}, "no valid type"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
            "together",
        ),
        ({"type": "object"}, "pruned"),
        ({"type": "array"}, "needs items"),
        ({"x-kubernetes-int-or-string": True, "type": "string", "anyOf": []}, "int-or-string"),
        ({"type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}]}, "CEL"),
        (
            {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "required or defaulted",
        ),
        ({"type": "object", "required": ["a"], "properties": {"b": {"type": "string"}}}, "required field"),
    ]
    for schema, fragment in bad:
        problems = structural_problems(schema, "x")
        assert any(fragment in p for p in problems), (schema, problems)
