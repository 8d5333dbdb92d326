"""OpenAPI v3 documents, as much of them as kubectl reads.

``kubectl apply``/``create`` validate before they write: kubectl asks ``/openapi/v3`` whether the
server validates fields itself (the ``fieldValidation`` query parameter on each kind's PATCH
operation, found by its ``x-kubernetes-group-version-kind``) and, when it does, leaves validation
to the server. Without these documents kubectl refuses to write (``failed to download openapi``)
unless told ``--validate=false``. ``kubectl explain`` walks the schemas (``schemas.kind_schema``:
the CRDs' own for custom kinds, a minimal one for built-in kinds), with ``metadata`` a reference
to ObjectMeta as the real server publishes it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .builtin_schemas import OBJECT_META
from .kinds import Registry, ResourceType
from .schemas import kind_schema

OBJECT_META_NAME = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
METADATA_REF = {
    "description": "Standard object's metadata.",
    "default": {},
    "allOf": [{"$ref": f"#/components/schemas/{OBJECT_META_NAME}"}],
}


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _hash(group: str, version: str) -> str:
    return hashlib.sha256(f"{group}/{version}".encode()).hexdigest()[:16].upper()


def root(registry: Registry) -> dict[str, Any]:
    """``/openapi/v3``: one entry per group-version, with the URL of its document."""
    paths: dict[str, Any] = {}
    for rtype in registry.types:
        path = _gv_path(rtype.group, rtype.version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={_hash(rtype.group, rtype.version)}"}
    return {"paths": paths}


def _gvk(rtype: ResourceType) -> list[dict[str, str]]:
    return [{"group": rtype.group, "version": rtype.version, "kind": rtype.kind}]


def _operation(rtype: ResourceType, verb: str, params: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "operationId": f"{verb}{rtype.kind}",
        "parameters": params,
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": verb,
        # an operation names one kind (an object); a schema lists its kinds (a list)
        "x-kubernetes-group-version-kind": _gvk(rtype)[0],
    }


def _query(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}


def document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """``/openapi/v3/api/v1`` or ``/openapi/v3/apis/GROUP/VERSION``; None for an unknown one."""
    types = registry.in_group_version(group, version)
    if not types:
        return None
    prefix = "/" + _gv_path(group, version)
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {OBJECT_META_NAME: OBJECT_META}
    validation = [_query("fieldValidation"), _query("dryRun"), _query("fieldManager")]
    for rtype in types:
        scope = f"{prefix}/namespaces/{{namespace}}/{rtype.plural}" if rtype.namespaced else f"{prefix}/{rtype.plural}"
        paths[scope] = {"post": _operation(rtype, "post", validation), "get": _operation(rtype, "list", [])}
        paths[f"{scope}/{{name}}"] = {
            "get": _operation(rtype, "get", []),
            "put": _operation(rtype, "put", validation),
            "patch": _operation(rtype, "patch", validation),
            "delete": _operation(rtype, "delete", []),
        }
        name = ".".join(p for p in (_reverse_domain(rtype.group), rtype.version, rtype.kind) if p)
        schema = kind_schema(rtype)
        properties = {**(schema.get("properties") or {}), "metadata": METADATA_REF}
        schemas[name] = {**schema, "properties": properties, "x-kubernetes-group-version-kind": _gvk(rtype)}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (trainyard sandbox)", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _reverse_domain(group: str) -> str:
    return ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
