"""trainyard's CRD copies (manifests/crds) held to the CRDs the modules ship (the real cluster's).

The embedded server prunes, defaults and validates custom resources with the copies, so a
constraint the copy lacks (a maxLength, a default, a required field, a field the copy does not
declare) is an object the embedded server accepts, or shapes, otherwise than kube-apiserver
would. ``disagreements`` walks a copy's schema beside the upstream one and names every such
place; parts the copy leaves open on purpose (``x-kubernetes-preserve-unknown-fields`` with no
properties: the pod templates) are not walked. CEL rules are not compared: the copies carry none
(tests/deploy keeps them to what 1.27 serves); ``has_rules`` says which upstream kinds have some.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

Schema = dict[str, Any]
CONSTRAINTS = (
    "type",
    "enum",
    "default",
    "required",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "format",
    "nullable",
    "maxProperties",
    "minProperties",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
)


def schemas(paths: Iterable[Path]) -> dict[tuple[str, str, str], Schema]:
    """(group, version, kind) -> openAPIV3Schema of every CRD version in ``paths``."""
    found: dict[tuple[str, str, str], Schema] = {}
    for path in paths:
        for document in yaml.safe_load_all(path.read_text()):
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                continue
            spec = document["spec"]
            for version in spec["versions"]:
                schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
                found[(spec["group"], version["name"], spec["names"]["kind"])] = schema
    return found


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, str) for x in [*a, *b]):
        return sorted(a) == sorted(b)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def has_rules(schema: Schema) -> bool:
    """Whether any part of ``schema`` carries CEL rules (``x-kubernetes-validations``)."""
    if schema.get("x-kubernetes-validations"):
        return True
    nested = [*(schema.get("properties") or {}).values()]
    nested += [schema[key] for key in ("items", "additionalProperties") if isinstance(schema.get(key), dict)]
    return any(has_rules(child) for child in nested)


def disagreements(copy: Schema, upstream: Schema, path: str) -> dict[str, str]:
    """Every place where ``copy`` holds objects to other rules than ``upstream``: "path keyword" (or
    "path only-in-copy" / "path not-in-copy") -> what each says."""
    if copy.get("x-kubernetes-preserve-unknown-fields"):
        return {}  # left open on purpose: kept as given
    found = {
        f"{path} {key}": f"{copy.get(key)!r} in the copy, {upstream.get(key)!r} upstream"
        for key in CONSTRAINTS
        if not _same(copy.get(key), upstream.get(key))
    }
    mine, theirs = copy.get("properties") or {}, upstream.get("properties") or {}
    for name in sorted(set(mine) | set(theirs)):
        if name not in mine:
            found[f"{path}.{name} not-in-copy"] = "not declared in the copy: the embedded server prunes it"
        elif name not in theirs:
            found[f"{path}.{name} only-in-copy"] = "only in the copy: kube-apiserver prunes it"
        else:
            found.update(disagreements(mine[name], theirs[name], f"{path}.{name}"))
    for nested, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(copy.get(nested), dict) and isinstance(upstream.get(nested), dict):
            found.update(disagreements(copy[nested], upstream[nested], path + suffix))
    return found
