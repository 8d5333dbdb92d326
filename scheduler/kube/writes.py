"""Writes that survive a busy cluster: optimistic concurrency with resourceVersion, and retries.

``create_unless_exists`` creates an object whose name is deterministic, a repeat being a no-op.
``update_with_retry`` reads the object, lets the caller change a copy, and PUTs it with the
resourceVersion it read; a 409 (someone wrote in between) starts over from a fresh read, so a
change is never applied to a stale object. Transient answers (429, 5xx) and dropped
connections are retried with backoff by ``with_retries``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp

from scheduler.kube.backoff import Backoff
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import KubeApiError
from scheduler.kube.kinds import KubeKind, kind_named

log = logging.getLogger(__name__)

T = TypeVar("T")
Mutation = Callable[[dict[str, Any]], dict[str, Any] | None]


class ConflictRetriesExhausted(KubeApiError):
    """Every attempt of a read-modify-write met a 409: the object is changing too fast."""


async def with_retries(
    call: Callable[[], Awaitable[T]], *, attempts: int = 5, backoff: Backoff | None = None, what: str = "request"
) -> T:
    """``await call()``, again after transient failures (429, 5xx, connection errors), up to ``attempts``."""
    delays = backoff or Backoff(initial=0.1, maximum=5.0)
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except KubeApiError as error:
            if not error.transient or attempt == attempts:
                raise
            delay = delays.next_delay(error.retry_after)
            log.info("%s: %s; retry %d/%d in %.2fs", what, error, attempt, attempts - 1, delay)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            if attempt == attempts:
                raise
            delay = delays.next_delay()
            log.info("%s: %s; retry %d/%d in %.2fs", what, error, attempt, attempts - 1, delay)
        await asyncio.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def create_unless_exists(
    client: KubeClient, document: dict[str, Any], *, attempts: int = 5, what: str | None = None
) -> bool:
    """Create ``document``; True if this call created it, False if an object of its name was
    already there (409 AlreadyExists). Objects with deterministic names are created this way, so a
    repeated create is a no-op: a reconciler whose cache is behind, a rerun, or a retry whose first
    attempt landed but whose answer was lost."""
    try:
        await with_retries(
            lambda: client.create(document), attempts=attempts, what=what or f"create {document.get('kind')}"
        )
    except KubeApiError as error:
        if error.status == 409:
            return False
        raise
    return True


async def _read_modify_write(
    client: KubeClient,
    kind: KubeKind,
    name: str,
    namespace: str | None,
    mutate: Mutation,
    *,
    status: bool,
    attempts: int,
    backoff: Backoff | None,
) -> dict[str, Any]:
    what = f"{kind.kind} {kind.key(namespace, name)}"
    for _ in range(attempts):
        current = await with_retries(lambda: client.get(kind, name, namespace), backoff=backoff, what=f"get {what}")
        desired = mutate(copy.deepcopy(current))
        if desired is None:
            return current  # nothing to change
        metadata = desired.setdefault("metadata", {})
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            return await with_retries(
                functools.partial(client.replace, desired, status=status), backoff=backoff, what=f"update {what}"
            )
        except KubeApiError as error:
            if error.status != 409:
                raise
            log.info("update %s: conflict, reading it again", what)
    raise ConflictRetriesExhausted(
        409, "Conflict", f"{what} kept changing: {attempts} read-modify-write attempts all met a conflict"
    )


async def update_with_retry(
    client: KubeClient,
    kind: str | KubeKind,
    name: str,
    namespace: str | None,
    mutate: Mutation,
    *,
    attempts: int = 5,
    backoff: Backoff | None = None,
) -> dict[str, Any]:
    """Get, ``mutate(copy)``, PUT with the read resourceVersion; on 409 start over. ``None`` from mutate: no write."""
    return await _read_modify_write(
        client, kind_named(kind), name, namespace, mutate, status=False, attempts=attempts, backoff=backoff
    )


async def update_status_with_retry(
    client: KubeClient,
    kind: str | KubeKind,
    name: str,
    namespace: str | None,
    mutate: Mutation,
    *,
    attempts: int = 5,
    backoff: Backoff | None = None,
) -> dict[str, Any]:
    """As ``update_with_retry``, through the ``/status`` subresource (only status changes)."""
    return await _read_modify_write(
        client, kind_named(kind), name, namespace, mutate, status=True, attempts=attempts, backoff=backoff
    )


async def patch_status(
    client: KubeClient,
    kind: str | KubeKind,
    name: str,
    namespace: str | None,
    status: dict[str, Any],
    *,
    resource_version: str | None = None,
    attempts: int = 5,
    backoff: Backoff | None = None,
) -> dict[str, Any]:
    """Merge ``status`` into the object's status (``null`` removes a field), retrying transient failures.

    With ``resource_version`` the patch applies only to that revision (409 otherwise).
    """
    body: dict[str, Any] = {"status": status}
    if resource_version is not None:
        body["metadata"] = {"resourceVersion": resource_version}
    k = kind_named(kind)
    return await with_retries(
        lambda: client.patch(k, name, body, namespace, status=True),
        attempts=attempts,
        backoff=backoff,
        what=f"patch status of {k.kind} {k.key(namespace, name)}",
    )
