"""The schema of each kind the server stores: its CRD's (manifests/crds), the built-in one, or open.

One answer for both readers: the OpenAPI documents (``kubectl explain``) and server-side apply.
As on the real server, a custom resource's ``metadata`` is ObjectMeta whatever its CRD says.
"""

from __future__ import annotations

from functools import cache

from .builtin_schemas import OBJECT_META, Schema, builtin_schema
from .crds import crd_version
from .kinds import ResourceType

OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


@cache
def kind_schema(rtype: ResourceType) -> Schema:
    """The schema of ``rtype``'s objects (read only: it is shared)."""
    if not rtype.custom:
        return builtin_schema(rtype.group, rtype.kind) or {**OPEN, "properties": {"metadata": OBJECT_META}}
    crd = crd_version(rtype.group, rtype.version, rtype.kind)
    schema = crd.schema if crd is not None and crd.schema else OPEN
    return {**schema, "properties": {**(schema.get("properties") or {}), "metadata": OBJECT_META}}
