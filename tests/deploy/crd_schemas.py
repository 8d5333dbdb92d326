"""The CRDs under manifests/crds as data: a structural-schema checker and a JSON Schema view.

``structural_problems`` applies the rules the API server enforces on an apiextensions.k8s.io/v1
schema (every node typed, ``properties`` and ``additionalProperties`` never together, int-or-string
only as ``anyOf`` of integer and string, ...) plus trainyard's own: only keywords Kubernetes 1.27
accepts, no CEL rules, and no object that would prune everything given to it.

``as_json_schema`` turns an openAPIV3Schema into a JSON Schema that rejects unknown fields where
the API server would prune them, so a field missing from a CRD fails validation instead of
vanishing silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "manifests" / "crds"

# apiextensions.k8s.io/v1 JSONSchemaProps keywords this project uses; anything else is flagged.
ALLOWED_KEYWORDS = {
    "type",
    "format",
    "description",
    "properties",
    "additionalProperties",
    "items",
    "required",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "maxProperties",
    "pattern",
    "nullable",
    "anyOf",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}


class _NoTimestampLoader(yaml.SafeLoader):
    """YAML as Kubernetes reads it: an unquoted timestamp stays a string."""


_NoTimestampLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(path: Path) -> list[Any]:
    return [d for d in yaml.load_all(path.read_text(), Loader=_NoTimestampLoader) if d is not None]


def crd_files() -> list[Path]:
    return sorted(p for p in CRDS.rglob("*.yaml") if p.name != "kustomization.yaml")


def load_crds() -> list[dict[str, Any]]:
    return [d for path in crd_files() for d in load_documents(path)]


def structural_problems(schema: dict[str, Any], where: str = "", *, depth: int = 0) -> list[str]:
    """What makes ``schema`` non-structural (or unfit for 1.27), one line each; [] when none."""
    problems: list[str] = []
    unknown = set(schema) - ALLOWED_KEYWORDS
    if unknown:
        problems.append(
            f"{where}: keywords {sorted(unknown)} are not used by trainyard's CRDs (CEL rules need 1.29 GA)"
        )
    if schema.get("x-kubernetes-int-or-string"):
        if "type" in schema:
            problems.append(f"{where}: an int-or-string node has no type")
        if schema.get("anyOf") != [{"type": "integer"}, {"type": "string"}]:
            problems.append(f"{where}: int-or-string must be anyOf integer, string")
        return problems
    if "anyOf" in schema:
        problems.append(f"{where}: anyOf is only used for int-or-string")
    kind = schema.get("type")
    if kind not in TYPES:
        problems.append(f"{where}: no valid type ({kind!r}); a structural schema types every node")
        return problems
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{where}: properties and additionalProperties cannot be used together")
    if kind == "object":
        problems.extend(_object_problems(schema, where, depth))
    else:
        for keyword in ("properties", "additionalProperties", "required", "x-kubernetes-preserve-unknown-fields"):
            if keyword in schema:
                problems.append(f"{where}: {keyword} on a node of type {kind}")
    if kind == "array":
        problems.extend(_array_problems(schema, where, depth))
    elif "items" in schema:
        problems.append(f"{where}: items on a node of type {kind}")
    return problems


def _object_problems(schema: dict[str, Any], where: str, depth: int) -> list[str]:
    """An object node: its fields are kept (properties, additionalProperties or preserved), each child structural."""
    problems: list[str] = []
    preserved = schema.get("x-kubernetes-preserve-unknown-fields") is True
    empty_struct = schema.get("maxProperties") == 0  # an empty Go struct, e.g. mlPolicy.jax: {}
    open_fields = "properties" in schema or "additionalProperties" in schema
    if not (open_fields or preserved or empty_struct):
        problems.append(f"{where}: an object with no properties would have every field pruned")
    for name, child in (schema.get("properties") or {}).items():
        if depth == 0 and name == "metadata":
            if child != {"type": "object"}:
                problems.append(f"{where}.metadata: the root's metadata is the API server's: {{type: object}}")
            continue
        if not isinstance(child, dict):
            problems.append(f"{where}.{name}: not a schema ({child!r})")
            continue
        problems.extend(structural_problems(child, f"{where}.{name}", depth=depth + 1))
    for name in schema.get("required") or []:
        if name not in (schema.get("properties") or {}):
            problems.append(f"{where}: required field {name!r} is not among its properties")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        problems.extend(structural_problems(extra, f"{where}.*", depth=depth + 1))
    elif extra is not None:
        problems.append(f"{where}: additionalProperties must be a schema (v1 forbids false)")
    return problems


def _array_problems(schema: dict[str, Any], where: str, depth: int) -> list[str]:
    """An array node: structural items and, for a map list, keys that are required or defaulted fields."""
    items = schema.get("items")
    if not isinstance(items, dict):
        return [f"{where}: an array needs items"]
    problems = structural_problems(items, f"{where}[]", depth=depth + 1)
    if schema.get("x-kubernetes-list-type") == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        fields = items.get("properties") or {}
        if not keys:
            problems.append(f"{where}: a map list needs x-kubernetes-list-map-keys")
        for key in keys:
            if key not in fields:
                problems.append(f"{where}: map key {key!r} is not a field of the items")
            elif key not in (items.get("required") or []) and "default" not in fields[key]:
                problems.append(f"{where}: map key {key!r} must be required or defaulted")
    return problems


def as_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    if schema.get("x-kubernetes-int-or-string"):
        converted: dict[str, Any] = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        if "pattern" in schema:
            converted["pattern"] = schema["pattern"]
        return converted
    converted = {}
    for keyword in ("type", "enum", "required", "minimum", "maximum", "minLength", "maxLength", "pattern"):
        if keyword in schema:
            converted[keyword] = schema[keyword]
    for keyword in ("minItems", "maxItems", "maxProperties"):
        if keyword in schema:
            converted[keyword] = schema[keyword]
    if schema.get("nullable"):
        converted["type"] = [schema["type"], "null"]
        if "enum" in converted:
            converted["enum"] = [*converted["enum"], None]
    if "properties" in schema:
        converted["properties"] = {name: as_json_schema(child) for name, child in schema["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            converted["additionalProperties"] = False
    if isinstance(schema.get("additionalProperties"), dict):
        converted["additionalProperties"] = as_json_schema(schema["additionalProperties"])
    if "items" in schema:
        converted["items"] = as_json_schema(schema["items"])
    return converted


def drop_nulls(schema: dict[str, Any], value: Any) -> Any:
    """``value`` with the nulls removed that the API server removes before validating: a null
    in a field whose schema is not ``nullable`` (apiextensions.k8s.io/v1 pruning of nulls)."""
    if isinstance(value, dict):
        fields = schema.get("properties")
        extra = schema.get("additionalProperties")
        kept = {}
        for key, item in value.items():
            child = fields.get(key) if fields is not None else (extra if isinstance(extra, dict) else None)
            if item is None and child is not None and not child.get("nullable"):
                continue
            kept[key] = drop_nulls(child, item) if child is not None else item
        return kept
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [drop_nulls(schema["items"], item) for item in value]
    return value


def served_versions(crds: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) → that version's openAPIV3Schema, for every served version."""
    served = {}
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if version["served"]:
                key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                served[key] = version["schema"]["openAPIV3Schema"]
    return served
