"""The reads that are not watches: discovery and OpenAPI documents by path, and lists.

Lists are shaped as the real server shapes them: paged (``limit``/``continue``, with
``remainingItemCount`` when no selector filters), filtered by label and field selectors, and
with built-in items carrying no kind or apiVersion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from . import discovery, openapi
from .errors import ApiError
from .kinds import Registry
from .paging import parse_limit
from .routes import Target
from .store import Store
from .watch_streams import matcher


def missing() -> NoReturn:
    raise ApiError(404, "the server could not find the requested resource")


def discovery_document(registry: Registry, path: str) -> dict[str, Any] | None:
    """The discovery or OpenAPI document at ``path``; None when ``path`` is not a discovery path."""
    parts = [p for p in path.split("/") if p]
    if parts == ["version"]:
        return discovery.version_info()
    if parts == ["api"]:
        return discovery.core_versions()
    if len(parts) == 2 and parts[0] == "api":
        return discovery.resource_list(registry, "", parts[1]) or missing()
    if parts == ["apis"]:
        return discovery.group_list(registry)
    if len(parts) == 2 and parts[0] == "apis":
        return discovery.group(registry, parts[1]) or missing()
    if len(parts) == 3 and parts[0] == "apis":
        return discovery.resource_list(registry, parts[1], parts[2]) or missing()
    if parts[:2] == ["openapi", "v3"]:
        return openapi_document(registry, parts[2:])
    return None


def openapi_document(registry: Registry, parts: list[str]) -> dict[str, Any]:
    if not parts:
        return openapi.root(registry)
    if len(parts) == 2 and parts[0] == "api":
        return openapi.document(registry, "", parts[1]) or missing()
    if len(parts) == 3 and parts[0] == "apis":
        return openapi.document(registry, parts[1], parts[2]) or missing()
    missing()


def list_objects(store: Store, target: Target, query: Mapping[str, str]) -> dict[str, Any]:
    """One page of a list request, as a ``KindList``."""
    rtype = target.rtype
    filtered = bool(query.get("labelSelector") or query.get("fieldSelector"))
    page = store.list_page(
        rtype,
        target.namespace,
        matcher(rtype, query),
        limit=parse_limit(query.get("limit")),
        continue_token=query.get("continue") or None,
        count_remaining=not filtered,
    )
    if not rtype.custom:
        # built-in list items carry no kind/apiVersion, as on the real server
        for item in page.items:
            item.pop("kind", None)
            item.pop("apiVersion", None)
    metadata: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
    if page.continue_token is not None:
        metadata["continue"] = page.continue_token
    if page.remaining_item_count is not None:
        metadata["remainingItemCount"] = page.remaining_item_count
    return {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": metadata, "items": page.items}
