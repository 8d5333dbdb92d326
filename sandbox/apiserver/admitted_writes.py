"""Writes that pass through admission webhooks: create, update and patch, as kube-apiserver orders them.

The object a webhook sees is the one that would be stored: the request body for a create or an
update, the stored object with the patch applied for a patch (pinned to the revision it was
computed from, and recomputed if that revision moves while the webhooks are called, as the real
server retries a patch on conflict). Mutations are applied before the store's own checks run.
"""

from __future__ import annotations

from typing import Any

from multidict import MultiDict

from .admission import Admission
from .errors import ApiError
from .patches import apply_patch
from .records import clone
from .routes import Target
from .store import Store
from .write_checks import prepare

OPERATIONS = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE"}
PATCH_RETRIES = 5


def warning_headers(warnings: list[str]) -> MultiDict[str]:
    """``Warning: 299 - "text"`` headers, one per warning, as the real server sends them."""
    headers: MultiDict[str] = MultiDict()
    for text in warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        headers.add("Warning", f'299 - "{escaped}"')
    return headers


async def _create_admitted(
    store: Store, admission: Admission, target: Target, body: Any, *, dry_run: bool, manager: str | None
) -> tuple[int, dict[str, Any], list[str]]:
    rtype, namespace = target.rtype, target.namespace
    warnings: list[str] = []
    obj = clone(dict(body))
    prepare(rtype, obj, warnings)
    admitted = await admission.admit(
        "CREATE",
        rtype,
        namespace,
        None,
        obj,
        None,
        dry_run=dry_run,
        check=lambda candidate: store.creatable(rtype, namespace, candidate),
    )
    assert admitted.obj is not None
    created = store.create(rtype, namespace, admitted.obj, dry_run=dry_run, manager=manager)
    return 201, created, warnings + admitted.warnings


async def write_admitted(
    store: Store,
    admission: Admission,
    verb: str,
    target: Target,
    body: Any,
    content_type: str,
    *,
    dry_run: bool,
    manager: str | None = None,
) -> tuple[int, dict[str, Any], list[str]]:
    """Create, update or patch through the admission chain: (HTTP code, stored object, warnings).

    The webhooks see the object decoded as the real server decodes it (pruned and defaulted: its
    pruned fields are the answer's first warnings); the registry's validation runs between the
    mutating and the validating webhooks."""
    rtype, namespace, name = target.rtype, target.namespace, target.name
    status = target.subresource == "status"
    warnings: list[str] = []
    if verb == "create":
        return await _create_admitted(store, admission, target, body, dry_run=dry_run, manager=manager)
    for attempt in range(PATCH_RETRIES):
        old = store.get(rtype, namespace, str(name))
        if verb == "update":
            new = clone(dict(body))
        else:
            new = apply_patch(rtype, content_type, store.get(rtype, namespace, str(name)), body)
            # a patch applies to what is stored now: pin it, and retry if it moves meanwhile
            new.setdefault("metadata", {})["resourceVersion"] = old["metadata"]["resourceVersion"]
        prepare(rtype, new, warnings if attempt == 0 else None, only="status" if status else None)

        def check(candidate: dict[str, Any]) -> object:
            return store.update(rtype, namespace, str(name), candidate, status=status, dry_run=True)

        try:
            admitted = await admission.admit(
                "UPDATE",
                rtype,
                namespace,
                str(name),
                new,
                old,
                subresource=target.subresource,
                dry_run=dry_run,
                check=check,
            )
            assert admitted.obj is not None
            written = store.update(
                rtype, namespace, str(name), admitted.obj, status=status, dry_run=dry_run, manager=manager
            )
        except ApiError as error:
            if verb == "patch" and error.code == 409 and attempt + 1 < PATCH_RETRIES:
                continue
            raise
        return 200, written, warnings + admitted.warnings
    raise AssertionError("unreachable: the last attempt returns or raises")
