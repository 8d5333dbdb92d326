"""The watch loop, written once for every kind: list, then watch; list again on 410.

An ``Informer`` keeps one kind (optionally one namespace or label selector) mirrored into an
``ObjectSink``. It lists, hands every object to the sink, says ``mark_loaded()`` once, and
watches from the list's resourceVersion. A stream that ends (``timeoutSeconds``) or goes silent
past the inactivity timeout is watched again from the last revision seen; a 410 means the
revision is gone, so it lists again and reconciles — objects that vanished meanwhile are
deleted from the sink, objects it already has at the same revision are not applied twice.
Other errors (5xx, 429, a dropped connection) back off exponentially and try again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from runtimes.k8s.sink import ObjectSink as ObjectSink  # the one protocol, re-exported
from scheduler.kube.backoff import Backoff
from scheduler.kube.client import KubeClient, WatchEvent, WatchInactive
from scheduler.kube.errors import KubeApiError, WatchExpired
from scheduler.kube.kinds import KubeKind, kind_named

log = logging.getLogger(__name__)

# What a broken connection or a server in trouble looks like; anything else is a bug and raised.
RETRIABLE_ERRORS = (KubeApiError, aiohttp.ClientError, OSError, TimeoutError, ValueError)


@dataclass
class InformerStats:
    """Counters for logs, metrics and tests."""

    lists: int = 0
    watches: int = 0
    expired: int = 0  # 410s
    inactive: int = 0  # watches restarted for silence
    errors: int = 0
    rejected: int = 0  # objects the sink refused
    applied: int = 0
    deleted: int = 0


@dataclass
class InformerSettings:
    watch_timeout_seconds: int = 300  # the server ends each watch after this (timeoutSeconds)
    inactivity_timeout: float = 330.0  # no line for this long: the stream is stuck, watch again
    backoff: Backoff = field(default_factory=Backoff)
    # Objects per list request (limit/continue); None, the default, lists in one request, as
    # client-go's reflector does (its resourceVersion=0 list is served whole from the watch
    # cache). Paged, a list of 10,000 objects is 20 requests, and a refusal of any one of them
    # (a 429, a 5xx) starts the whole list over.
    page_size: int | None = None


class Informer:
    def __init__(
        self,
        client: KubeClient,
        kind: str | KubeKind,
        sink: ObjectSink,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        settings: InformerSettings | None = None,
    ) -> None:
        self.client = client
        self.kind = kind_named(kind)
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.settings = settings or InformerSettings()
        self.stats = InformerStats()
        self.synced = asyncio.Event()
        self.resource_version: str | None = None  # None: list (again) before watching
        # what the sink holds: (namespace, name) -> resourceVersion
        self.known: dict[tuple[str | None, str], str] = {}

    async def run(self) -> None:
        """Mirror the kind into the sink until cancelled."""
        backoff = self.settings.backoff
        while True:
            try:
                if self.resource_version is None:
                    await self._list()
                    backoff.reset()
                await self._watch(backoff)
            except WatchExpired:
                self.stats.expired += 1
                log.info("%s watch expired at resourceVersion %s; listing again", self.kind.kind, self.resource_version)
                self.resource_version = None
            except WatchInactive as silent:
                self.stats.inactive += 1
                log.warning("%s; watching again from %s", silent, self.resource_version)
            except RETRIABLE_ERRORS as error:
                self.stats.errors += 1
                retry_after = error.retry_after if isinstance(error, KubeApiError) else None
                delay = backoff.next_delay(retry_after)
                log.warning("%s informer: %s; retrying in %.2fs", self.kind.kind, error, delay)
                await asyncio.sleep(delay)

    async def _list(self) -> None:
        listed = await self.client.list(
            self.kind, self.namespace, label_selector=self.label_selector, limit=self.settings.page_size
        )
        self.stats.lists += 1
        present: set[tuple[str | None, str]] = set()
        for item in listed.items:
            key = self._key(item)
            present.add(key)
            self._apply(key, item)
        for key in [k for k in self.known if k not in present]:
            self._delete(key)
        self.resource_version = listed.resource_version
        if not self.synced.is_set():
            self.synced.set()
            self.sink.mark_loaded()

    async def _watch(self, backoff: Backoff) -> None:
        self.stats.watches += 1
        stream = self.client.watch(
            self.kind,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            timeout_seconds=self.settings.watch_timeout_seconds,
            inactivity_timeout=self.settings.inactivity_timeout,
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                self._handle(event)
                backoff.reset()

    def _handle(self, event: WatchEvent) -> None:
        if event.type == "BOOKMARK":
            pass
        elif event.type in ("ADDED", "MODIFIED"):
            self._apply(self._key(event.object), event.object)
        elif event.type == "DELETED":
            key = self._key(event.object)
            if key in self.known:
                self._delete(key)
        else:
            log.warning("%s watch: ignoring an event of type %r", self.kind.kind, event.type)
        if event.resource_version is not None:
            self.resource_version = event.resource_version

    def _key(self, document: dict[str, Any]) -> tuple[str | None, str]:
        metadata = document.get("metadata") or {}
        namespace = metadata.get("namespace") if self.kind.namespaced else None
        return namespace, str(metadata.get("name", ""))

    def _apply(self, key: tuple[str | None, str], document: dict[str, Any]) -> None:
        version = str((document.get("metadata") or {}).get("resourceVersion", ""))
        if version and self.known.get(key) == version:
            return  # already delivered at this revision (a replay after a re-list)
        self.known[key] = version
        try:
            self.sink.apply(document)
        except ValueError as refused:
            # One bad object must not stop the mirror; it stays known so it is not retried until it changes.
            self.stats.rejected += 1
            log.warning("%s %s refused by the cache: %s", self.kind.kind, "/".join(filter(None, key)), refused)
            return
        self.stats.applied += 1

    def _delete(self, key: tuple[str | None, str]) -> None:
        self.known.pop(key, None)
        self.sink.delete(self.kind.kind, key[1], key[0])
        self.stats.deleted += 1
