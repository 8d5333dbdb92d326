"""One shared mirror of the kinds the stand-ins read, fed by ``scheduler.kube`` informers over HTTP.

Each kind is kept in a ``Mirror`` (an ``ObjectSink``) that calls its listeners with the object
before and after every change, so a controller can enqueue work and keep its own indexes
(pods by owner, usage by node) up to date without scanning everything. Dependents are indexed
by their controller owner's uid, the lookup every stand-in needs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from scheduler.kube import Informer, InformerSettings, KubeClient

Key = tuple[str | None, str]  # (namespace, name)
Listener = Callable[[dict[str, Any] | None, dict[str, Any] | None], None]


def key_of(obj: dict[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace"), str(metadata.get("name", ""))


def controller_uid(obj: dict[str, Any] | None) -> str | None:
    """The uid of the object's controller owner (``ownerReferences[].controller: true``)."""
    if obj is None:
        return None
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return str(reference.get("uid"))
    return None


class Mirror:
    """The objects of one kind, as the informer last saw them."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.objects: dict[Key, dict[str, Any]] = {}
        self.by_owner: dict[str, set[Key]] = {}
        self.listeners: list[Listener] = []
        self.loaded = asyncio.Event()

    def apply(self, document: dict[str, Any]) -> None:
        key = key_of(document)
        old = self.objects.get(key)
        self.objects[key] = document
        self._index(key, old, document)
        for listener in self.listeners:
            listener(old, document)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        key = (namespace, name)
        old = self.objects.pop(key, None)
        if old is None:
            return
        self._index(key, old, None)
        for listener in self.listeners:
            listener(old, None)

    def mark_loaded(self) -> None:
        self.loaded.set()

    def _index(self, key: Key, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        before, after = controller_uid(old), controller_uid(new)
        if before == after:
            return
        if before is not None:
            owned = self.by_owner.get(before)
            if owned is not None:
                owned.discard(key)
                if not owned:
                    del self.by_owner[before]
        if after is not None:
            self.by_owner.setdefault(after, set()).add(key)

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((namespace, name))

    def owned_by(self, uid: str) -> list[dict[str, Any]]:
        return [self.objects[key] for key in sorted(self.by_owner.get(uid, ()), key=lambda k: (k[0] or "", k[1]))]


class ClusterCache:
    """Mirrors of several kinds; ``run()`` keeps them current until cancelled."""

    def __init__(self, client: KubeClient, kinds: Iterable[str], *, settings: InformerSettings | None = None) -> None:
        self.client = client
        self.mirrors = {kind: Mirror(kind) for kind in kinds}
        self.informers = [Informer(client, kind, mirror, settings=settings) for kind, mirror in self.mirrors.items()]

    def __getitem__(self, kind: str) -> Mirror:
        mirror = self.mirrors.get(kind)
        if mirror is None:
            raise KeyError(f"the stand-ins' cache does not watch {kind}; it watches {', '.join(self.mirrors)}")
        return mirror

    def listen(self, kind: str, listener: Listener) -> None:
        self[kind].listeners.append(listener)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tasks:
            for informer in self.informers:
                tasks.create_task(informer.run(), name=f"standin-informer-{informer.kind.kind}")

    async def wait_synced(self) -> None:
        await asyncio.gather(*(mirror.loaded.wait() for mirror in self.mirrors.values()))
