"""What the store records: keys, the events of its history, and the open watches they go to."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from .kinds import ResourceType

Key = tuple[str, str]  # (namespace or "", name)


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
