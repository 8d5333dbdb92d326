"""The watch side of the store: where a watch starts (a backlog of events) and what it follows.

A watch from no resourceVersion (or ``0``) starts with synthetic ADDED events for the current
objects; from a revision, with every retained event after it, or 410 ``Expired`` once the
history no longer reaches back (compaction). The subscription it gets queues what is written
from then on, with no gap between the two.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterator
from typing import Any

from .errors import ApiError
from .kinds import ResourceType
from .records import StoredEvent, Subscription


class WatchSubscriptions(ABC):
    resource_version: int
    history: deque[StoredEvent]
    compacted_through: int
    subscriptions: set[Subscription]

    @abstractmethod
    def items(self, rtype: ResourceType, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Stored objects of a type, in name order."""

    def subscribe(
        self, rtype: ResourceType, namespace: str | None, resource_version: str | None
    ) -> tuple[list[StoredEvent], Subscription]:
        """The events to replay first and a subscription for what follows, with no gap between.

        No (or ``0``) resourceVersion: synthetic ADDED events for the current objects. A
        revision: every retained event after it, or 410 when the history no longer reaches back.
        """
        if resource_version in (None, "", "0"):
            backlog = [
                StoredEvent(
                    int(obj["metadata"]["resourceVersion"]),
                    "ADDED",
                    rtype,
                    obj["metadata"].get("namespace") or "",
                    obj,
                    None,
                )
                for obj in self.items(rtype, namespace)
            ]
        else:
            try:
                since = int(str(resource_version))
            except ValueError:
                raise ApiError.bad_request(f"invalid resourceVersion {resource_version!r}") from None
            if since < self.compacted_through:
                if not rtype.watch_cache:  # read from etcd, which answers in its own words
                    raise ApiError(410, "The resourceVersion for the provided watch is too old.", reason="Expired")
                raise ApiError.expired(since, self.compacted_through + 1)
            backlog = [
                event
                for event in self.history
                if event.resource_version > since
                and event.rtype is rtype
                and (namespace is None or event.namespace == namespace)
            ]
        subscription = Subscription(rtype, namespace)
        self.subscriptions.add(subscription)
        return backlog, subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self.subscriptions.discard(subscription)

    def compact(self) -> None:
        """Forget the whole event history, as etcd compaction does.

        Afterwards a watch that resumes from any revision written so far gets 410, so a client
        must list again; watches already open keep streaming, as on the real server.
        """
        self.history.clear()
        self.compacted_through = self.resource_version + 1
