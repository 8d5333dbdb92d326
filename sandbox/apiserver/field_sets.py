"""Field sets, as structured-merge-diff (the API server's server-side apply library) writes them.

A field set is a set of paths; a path is a tuple of elements in ``fieldsV1`` spelling: ``f:NAME``
(a field or map key), ``k:{"name":"x"}`` (the item of a keyed list, its keys as compact JSON with
sorted names) or ``v:"x"`` (an item of a set list). ``fields_of`` gives the set an object's values
occupy, with the schema's list and map markers (``schemas.kind_schema``), following
structured-merge-diff's rules: every scalar, atomic list or atomic map is a path; every item of a
keyed or set list is a path, and so is every key that is not a declared field (a map's entry, or
any key of a part the schema leaves open), an empty object and a null. Lists the schema does not
describe are atomic; objects it does not describe are maps.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

Schema = dict[str, Any]
Path = tuple[str, ...]
MISSING: Any = object()  # value_at's answer for a path with no value

_EMPTY: Schema = {}


def child_schema(schema: Schema, key: str) -> tuple[Schema, bool]:
    """The schema of ``key`` in an object of ``schema``, and whether it is a declared field."""
    declared = (schema.get("properties") or {}).get(key)
    if declared is not None:
        return declared, True
    additional = schema.get("additionalProperties")
    return (additional if isinstance(additional, dict) else _EMPTY), False


def list_type(schema: Schema) -> str:
    return str(schema.get("x-kubernetes-list-type") or "atomic")


def is_atomic(schema: Schema, value: Any) -> bool:
    """Owned as one value: a scalar, an atomic list, or an object marked atomic."""
    if isinstance(value, list):
        return list_type(schema) == "atomic"
    if isinstance(value, dict):
        return schema.get("x-kubernetes-map-type") == "atomic"
    return True


def item_element(schema: Schema, item: Any) -> str:
    """The path element of one item of a keyed (``k:``) or set (``v:``) list."""
    if list_type(schema) == "set" or not isinstance(item, dict):
        return "v:" + json.dumps(item, separators=(",", ":"), sort_keys=True)
    keys = schema.get("x-kubernetes-list-map-keys") or []
    return "k:" + json.dumps({k: item[k] for k in keys if k in item}, separators=(",", ":"), sort_keys=True)


def fields_of(value: Any, schema: Schema, prefix: Path = ()) -> set[Path]:
    """The field set ``value`` occupies below ``prefix``."""
    found: set[Path] = set()
    _collect(value, schema, prefix, found)
    return found


def _collect(value: Any, schema: Schema, path: Path, found: set[Path]) -> None:
    if is_atomic(schema, value):
        if path:
            found.add(path)
        return
    if isinstance(value, list):
        if not value and path:
            found.add(path)  # an empty keyed or set list is a value of its own
        items = schema.get("items") or _EMPTY
        for item in value:
            item_path = (*path, item_element(schema, item))
            found.add(item_path)
            if isinstance(item, dict):
                _collect(item, items, item_path, found)
        return
    if not value and path:
        found.add(path)
    for key, child in value.items():
        sub, declared = child_schema(schema, key)
        child_path = (*path, f"f:{key}")
        if child is None or child == {} or not declared:
            found.add(child_path)
        if child is not None:
            _collect(child, sub, child_path, found)


def children(value: Any, schema: Schema) -> Iterator[tuple[str, Any, Schema]]:
    """(path element, child value, child schema) of an object or a keyed or set list."""
    if isinstance(value, dict) and not is_atomic(schema, value):
        for key, child in value.items():
            yield f"f:{key}", child, child_schema(schema, key)[0]
    elif isinstance(value, list) and not is_atomic(schema, value):
        items = schema.get("items") or _EMPTY
        for item in value:
            yield item_element(schema, item), item, items


def value_at(value: Any, schema: Schema, path: Path) -> Any:
    """The value at ``path`` in ``value`` (``MISSING`` where there is none)."""
    for element in path:
        step = next(((c, s) for e, c, s in children(value, schema) if e == element), None)
        if step is None:
            return MISSING
        value, schema = step
    return value


# ------------------------------------------------------------------------------- fieldsV1


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The nested ``fieldsV1`` form; a path that is in the set and has children gets ``.``."""
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}
    return _tidy(tree)


def _tidy(node: dict[str, Any]) -> dict[str, Any]:
    tidy = {key: _tidy(child) for key, child in node.items() if key != "."}
    if "." in node and tidy:
        return {".": {}, **tidy}
    return tidy


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    found: set[Path] = set()
    if not isinstance(tree, dict):
        return found
    if prefix and (not tree or "." in tree):
        found.add(prefix)
    for key, child in tree.items():
        if key != ".":
            found |= from_fields_v1(child, (*prefix, key))
    return found


def path_text(path: Path) -> str:
    """A path as structured-merge-diff prints it: ``.spec.containers[name="main"].image``."""
    text = ""
    for element in path:
        kind, rest = element[:2], element[2:]
        if kind == "f:":
            text += f".{rest}"
        elif kind == "k:":
            keys = json.loads(rest)
            text += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
        else:
            text += f"[={rest}]"
    return text
