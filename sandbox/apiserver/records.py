"""What the store records: keys, the events of its history, and the open watches they go to."""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from .kinds import ResourceType

Key = tuple[str, str]  # (namespace or "", name)
T = TypeVar("T")


def timestamp() -> str:
    """Now, as metadata timestamps are written (RFC 3339, seconds, UTC)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _clone(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clone(item) for item in value]
    return value


def clone(value: T) -> T:
    """A deep copy of a JSON document (dicts, lists and scalars), several times faster than
    ``copy.deepcopy``, which the store would otherwise spend most of its time in."""
    return cast(T, _clone(value))


@dataclass(frozen=True)
class StoredEvent:
    """One write, as watches see it: ``obj`` is the object after it, ``old`` before it."""

    resource_version: int
    type: str  # ADDED, MODIFIED, DELETED
    rtype: ResourceType
    namespace: str
    obj: dict[str, Any]
    old: dict[str, Any] | None


@dataclass(eq=False)
class Subscription:
    """An open watch: events of one type (and namespace) are queued here as they happen."""

    rtype: ResourceType
    namespace: str | None
    # None is the signal to end the stream (a fault, or the server stopping)
    queue: asyncio.Queue[StoredEvent | None] = field(default_factory=asyncio.Queue)
    abrupt: bool = False
    stalled: bool = False

    def close(self, *, abrupt: bool = False) -> None:
        self.abrupt = abrupt
        self.queue.put_nowait(None)

    def wants(self, event: StoredEvent) -> bool:
        return event.rtype is self.rtype and (self.namespace is None or self.namespace == event.namespace)
