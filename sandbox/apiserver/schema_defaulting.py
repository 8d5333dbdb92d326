"""Defaulting a custom resource from its structural schema, as apiextensions-apiserver defaults.

For each object, a declared property with a ``default`` that is missing (or ``null`` where the
schema does not allow null) gets a copy of the default; then every child is defaulted in turn,
the ones just filled in included, so ``preemption: {default: {}}`` comes back with its own fields'
defaults (structuraldefaulting.Default).
"""

from __future__ import annotations

from typing import Any

from .records import clone

Schema = dict[str, Any]


def apply_defaults(value: Any, schema: Schema) -> None:
    """Fill in ``schema``'s defaults in ``value`` (in place)."""
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        for key, declared in properties.items():
            if "default" not in declared:
                continue
            if key not in value or (value[key] is None and not declared.get("nullable")):
                value[key] = clone(declared["default"])
        additional = schema.get("additionalProperties")
        for key, child in value.items():
            below = properties.get(key)
            if below is not None:
                apply_defaults(child, below)
            elif isinstance(additional, dict):
                apply_defaults(child, additional)
    elif isinstance(value, list):
        items: Schema = schema.get("items") or {}
        for item in value:
            apply_defaults(item, items)
