"""Server-side apply requests: the applied object created or updated, through admission where webhooks
are registered, retried when the object moves while the webhooks are called (as a patch is)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .admission import Admission
from .admitted_writes import PATCH_RETRIES
from .errors import ApiError
from .routes import Target
from .server_side_apply import apply, checked_intent
from .store import Store
from .watch_streams import truthy


async def write_applied(
    store: Store,
    admission: Admission | None,
    target: Target,
    body: Any,
    query: Mapping[str, str],
    *,
    dry_run: bool,
) -> tuple[int, dict[str, Any], list[str]]:
    """(HTTP code, stored object, warnings) of an apply; ``admission`` None when no webhook matches."""
    rtype, namespace, name, subresource = target.rtype, target.namespace, str(target.name), target.subresource or ""
    manager = query.get("fieldManager") or ""
    intent = checked_intent(rtype, body, manager)
    given = (intent.get("metadata") or {}).get("name")
    if given not in (None, "", name):
        raise ApiError.bad_request(f"the name of the object ({given}) does not match the name on the URL ({name})")
    intent.setdefault("metadata", {})["name"] = name
    force = truthy(query.get("force"))
    for attempt in range(PATCH_RETRIES):
        try:
            live: dict[str, Any] | None = store.get(rtype, namespace, name)
        except ApiError as error:
            if error.code != 404 or subresource:
                raise
            live = None
        obj = apply(rtype, live, intent, manager, force=force, subresource=subresource)
        warnings: list[str] = []
        if admission is not None:
            operation, old = ("CREATE", None) if live is None else ("UPDATE", live)
            admitted = await admission.admit(
                operation, rtype, namespace, None if live is None else name, obj, old, dry_run=dry_run
            )
            assert admitted.obj is not None
            obj, warnings = admitted.obj, admitted.warnings
        if live is None:
            return 201, store.create(rtype, namespace, obj, dry_run=dry_run, applied=True), warnings
        try:
            return (
                200,
                store.update(rtype, namespace, name, obj, status=subresource == "status", dry_run=dry_run),
                warnings,
            )
        except ApiError as error:
            pinned = (intent.get("metadata") or {}).get("resourceVersion")
            if error.code != 409 or pinned or attempt + 1 == PATCH_RETRIES:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")
