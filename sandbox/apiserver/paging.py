"""``limit``/``continue`` on lists, as the real server pages through etcd.

A paged list is read at one revision: the first page's. Its continue token carries that
revision and the last key returned (base64 of ``{"v": "meta.k8s.io/v1", "rv": N, "start": K}``,
the real token's shape), and every later page shows the objects as they were at that revision,
rebuilt by undoing the events written since. Once the history no longer reaches back to the
revision (compaction), the token is expired: 410 ``Expired``, as the real server answers.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ApiError
from .kinds import ResourceType
from .records import Key, StoredEvent

TOKEN_VERSION = "meta.k8s.io/v1"
INCONSISTENT = -1  # a token's revision meaning "the current one"


@dataclass(frozen=True)
class ListPage:
    """One answer to a list: its items, the revision it was read at, and how to go on."""

    items: list[dict[str, Any]]
    resource_version: int
    continue_token: str | None = None
    remaining_item_count: int | None = None


@dataclass(frozen=True)
class Continue:
    resource_version: int
    start_after: str  # "namespace/name" of the last item returned


def encode_continue(resource_version: int, start_after: str) -> str:
    """The token, base64url without padding (Go's RawURLEncoding), as the real server writes it."""
    raw = json.dumps({"v": TOKEN_VERSION, "rv": resource_version, "start": start_after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> Continue:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        if not isinstance(decoded, dict) or decoded.get("v") != TOKEN_VERSION:
            raise ValueError("not a continue token")
        return Continue(int(decoded["rv"]), str(decoded["start"]))
    except (ValueError, KeyError, TypeError, binascii.Error) as error:
        raise ApiError.bad_request(f"invalid continue token: continue key is not valid: {error}") from None


def too_large(resource_version: int, current: int) -> ApiError:
    """A revision the server has not reached: 504, as kube-apiserver answers after waiting for it."""
    cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    message = f"Timeout: Too large resource version: {resource_version}, current: {current}"
    return ApiError(504, message, details={"causes": [cause], "retryAfterSeconds": 1})


def parse_limit(raw: str | None) -> int | None:
    if raw in (None, "", "0"):
        return None
    try:
        limit = int(str(raw))
    except ValueError:
        raise ApiError.bad_request(f"invalid limit {raw!r}") from None
    if limit < 0:
        raise ApiError.bad_request(f"invalid limit {raw!r}: must not be negative")
    return limit


def expired_continue(start_after: str) -> ApiError:
    """410 for a token older than the history, carrying the token that goes on from the same key at
    the current revision (``rv: -1``: an inconsistent rest of the list), as the real server does."""
    return ApiError(
        410,
        "The provided continue parameter is too old to display a consistent list result. You can start a new "
        "list without the continue parameter, or use the continue token in this response to retrieve the "
        "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
        "that were created, modified, or deleted between the time the first chunk was returned and now may show "
        "up in the list.",
        reason="Expired",
        metadata={"continue": encode_continue(INCONSISTENT, start_after)},
    )


def _key_of(start_after: str) -> Key:
    namespace, _, name = start_after.partition("/")
    return namespace, name


def snapshot(
    current: Mapping[Key, dict[str, Any]],
    history: Sequence[StoredEvent],
    rtype: ResourceType,
    namespace: str | None,
    resource_version: int,
) -> list[tuple[Key, dict[str, Any]]]:
    """The objects of a type as they were at a past revision: the current ones with every later
    event undone, newest first. ``history`` must reach back to the revision (the caller checks)."""
    objects = {key: obj for key, obj in current.items() if namespace in (None, key[0])}
    for event in reversed(history):
        if event.resource_version <= resource_version:
            break
        key = (event.namespace, str(event.obj["metadata"]["name"]))
        if event.rtype is not rtype or namespace not in (None, key[0]):
            continue
        if event.type == "ADDED" or event.old is None:
            objects.pop(key, None)
        else:
            objects[key] = event.old
    return sorted(objects.items(), key=lambda item: item[0])


def page(
    objects: Iterable[tuple[Key, dict[str, Any]]],
    position: Continue,
    matches: Callable[[Mapping[str, Any]], bool],
    limit: int | None,
    *,
    count_remaining: bool,
) -> ListPage:
    """Up to ``limit`` matching objects after the position's key (objects in key order), and the
    token for the rest when there is more."""
    start = _key_of(position.start_after) if position.start_after else None
    chosen: list[dict[str, Any]] = []
    remaining = 0
    last: Key | None = None
    for key, obj in objects:
        if (start is not None and key <= start) or not matches(obj):
            continue
        if limit is not None and len(chosen) >= limit:
            remaining += 1
            if not count_remaining:
                break
            continue
        chosen.append(dict(obj))  # the stored snapshot shared below its top level (never changed in place)
        last = key
    if not remaining or last is None:
        return ListPage(chosen, position.resource_version)
    token = encode_continue(position.resource_version, f"{last[0]}/{last[1]}")
    return ListPage(chosen, position.resource_version, token, remaining if count_remaining else None)
