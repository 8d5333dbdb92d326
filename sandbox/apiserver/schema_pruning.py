"""Pruning a custom resource to its structural schema, as apiextensions-apiserver prunes on decode.

A field the schema does not declare is dropped (unless the part says
``x-kubernetes-preserve-unknown-fields``), and so is a ``null`` the schema does not allow
(``nullable`` unset) and gives no default for, before defaulting. Each dropped field is named as
the real server names it in its ``Warning: unknown field "spec.podSets[0].extra"`` header. The
root's ``apiVersion``, ``kind`` and ``metadata`` are always kept (``metadata`` is pruned to
ObjectMeta), as are those of an ``x-kubernetes-embedded-resource``.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
ALWAYS_KEPT = ("apiVersion", "kind", "metadata")


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _drop_null(value: Any, schema: Schema) -> bool:
    return value is None and not schema.get("nullable") and "default" not in schema


def prune(value: Any, schema: Schema, path: str = "", *, root: bool = False) -> list[str]:
    """Drop what ``schema`` does not declare from ``value`` (in place); the dropped fields' paths."""
    dropped: list[str] = []
    if isinstance(value, dict):
        _prune_object(value, schema, path, root, dropped)
    elif isinstance(value, list):
        items: Schema = schema.get("items") or {}
        for index, item in enumerate(value):
            dropped.extend(prune(item, items, f"{path}[{index}]"))
    return dropped


def _prune_object(value: dict[str, Any], schema: Schema, path: str, root: bool, dropped: list[str]) -> None:
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
    for key in list(value):
        child = value[key]
        declared = properties.get(key)
        if declared is None and isinstance(additional, dict):
            declared = additional
        if declared is None:
            if embedded and key in ALWAYS_KEPT:
                continue
            if not preserve:
                del value[key]
                dropped.append(_child(path, key))
            continue
        if _drop_null(child, declared):
            del value[key]
            continue
        dropped.extend(prune(child, declared, _child(path, key)))
