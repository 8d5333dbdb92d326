"""Watch streams: ``GET ...?watch=true`` as chunked newline-delimited JSON events.

A stream starts with the backlog since the requested resourceVersion (or the current objects),
then follows the store's events; an object that starts or stops matching the selectors is
ADDED or DELETED for this watch, as on the real server. 410 Gone arrives as an ERROR event,
``timeoutSeconds`` ends the stream (with a BOOKMARK when ``allowWatchBookmarks``), and
``kubectl get -w`` (Accept: Table) gets each object as a one-row Table.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from runtimes.k8s import wire

from . import tables
from .errors import ApiError
from .kinds import ResourceType
from .records import StoredEvent, Subscription
from .routes import Target
from .selectors import parse_field_selector, parse_label_selector
from .store import Store

Render = Callable[[dict[str, Any]], dict[str, Any]]
Matcher = Callable[[Mapping[str, Any]], bool]


def truthy(value: str | None) -> bool:
    # kubernetes-asyncio sends watch=True; the real server parses booleans like Go's ParseBool
    return value is not None and value.lower() in ("true", "1", "t")


def matcher(rtype: ResourceType, query: Mapping[str, str]) -> Matcher:
    """The request's labelSelector and fieldSelector as one predicate on an object."""
    labels_match = parse_label_selector(query.get("labelSelector"))
    fields_match = parse_field_selector(query.get("fieldSelector"), rtype)

    def matches(obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        return labels_match(metadata.get("labels") or {}) and fields_match(obj)

    return matches


def table_renderer(rtype: ResourceType, query: Mapping[str, str]) -> Render:
    """``kubectl get -w``: each event's object is a one-row Table."""
    include = query.get("includeObject", "Metadata")

    def render(obj: dict[str, Any]) -> dict[str, Any]:
        revision = {"resourceVersion": str((obj.get("metadata") or {}).get("resourceVersion", ""))}
        return tables.table(rtype, [obj], revision, include)

    return render


async def send(response: web.StreamResponse, event: Mapping[str, Any]) -> None:
    await response.write(wire.dumps(event) + b"\n")


def _timeout(query: Mapping[str, str]) -> float | None:
    if not query.get("timeoutSeconds"):
        return None
    try:
        return float(query["timeoutSeconds"])
    except ValueError:
        raise ApiError.bad_request(f"invalid timeoutSeconds {query['timeoutSeconds']!r}") from None


async def serve_watch(
    store: Store, request: web.Request, target: Target, query: Mapping[str, str]
) -> web.StreamResponse:
    """Answer a watch request: stream events until the timeout, a fault or the client leaving."""
    as_table = tables.wants_table(request.headers.get("Accept", ""))
    stream = WatchStream(
        store,
        target.rtype,
        matcher(target.rtype, query),
        table_renderer(target.rtype, query) if as_table else None,
        bookmarks=truthy(query.get("allowWatchBookmarks")),
    )
    timeout = _timeout(query)
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    try:
        backlog, subscription = store.subscribe(target.rtype, target.namespace, query.get("resourceVersion"))
    except ApiError as error:
        await send(response, {"type": "ERROR", "object": error.status()})
        return response
    try:
        await stream.run(request, response, subscription, backlog, timeout)
    except (ConnectionResetError, ConnectionError):
        pass  # the client went away
    finally:
        store.unsubscribe(subscription)
    return response


@dataclass
class WatchStream:
    """One watch's filter and rendering, and the loop that writes its events."""

    store: Store
    rtype: ResourceType
    matches: Matcher
    render: Render | None
    bookmarks: bool

    async def run(
        self,
        request: web.Request,
        response: web.StreamResponse,
        subscription: Subscription,
        backlog: list[StoredEvent],
        timeout: float | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        for replayed in backlog:
            await self.send_event(response, replayed)
        while True:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):  # not wait_for: it can swallow a cancellation on 3.11
                    event = await subscription.queue.get()
            except TimeoutError:
                break
            if event is None:
                if subscription.abrupt and request.transport is not None:
                    request.transport.abort()
                    raise ConnectionResetError("watch cut by an injected fault")
                return
            if not subscription.stalled:
                await self.send_event(response, event)
        if self.bookmarks and not subscription.stalled:
            # What is queued was committed before the bookmark's revision: it goes first, or a
            # client resuming from the bookmark would never see it.
            while not subscription.queue.empty():
                pending = subscription.queue.get_nowait()
                if pending is None:
                    return
                await self.send_event(response, pending)
            bookmark = {
                "kind": self.rtype.kind,
                "apiVersion": self.rtype.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
            }
            await send(response, {"type": "BOOKMARK", "object": bookmark})

    async def send_event(self, response: web.StreamResponse, event: StoredEvent) -> None:
        # With a selector, an object that starts or stops matching is ADDED or DELETED for this watch.
        now = self.matches(event.obj)
        before = self.matches(event.old) if event.old is not None else False
        event_type = event.type
        if event.type == "MODIFIED":
            if not now and not before:
                return
            if now and not before:
                event_type = "ADDED"
            elif before and not now:
                event_type = "DELETED"
        elif not now:
            return
        rendered = self.render(event.obj) if self.render else event.obj
        await send(response, {"type": event_type, "object": rendered})
