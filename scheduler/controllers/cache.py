"""The controllers' view of the cluster: every watched object, as the informers last saw it.

``ClusterCache`` is an ``ObjectSink`` (``scheduler.kube.informer``): informers ``apply`` and
``delete`` plain dicts into it. Reconcilers read it (``get``, ``list``, ``owned_by``) instead of
asking the API server, and change handlers (``on_change``) turn each change into keys for the
work queues. Documents are the informers' own dicts: readers must treat them as read-only and
copy before changing anything.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

ChangeHandler = Callable[[dict[str, Any] | None, dict[str, Any] | None], None]
ObjectKey = tuple[str | None, str]  # (namespace, name)


def _key_of(document: Mapping[str, Any]) -> ObjectKey:
    metadata = document.get("metadata") or {}
    namespace = metadata.get("namespace")
    return (str(namespace) if namespace else None), str(metadata.get("name", ""))


def _owner_uids(document: Mapping[str, Any]) -> set[str]:
    references = (document.get("metadata") or {}).get("ownerReferences") or []
    return {str(ref["uid"]) for ref in references if isinstance(ref, Mapping) and ref.get("uid")}


def labels_match(document: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    labels = (document.get("metadata") or {}).get("labels") or {}
    return all(labels.get(name) == value for name, value in wanted.items())


class ClusterCache:
    def __init__(self) -> None:
        self._objects: dict[str, dict[ObjectKey, dict[str, Any]]] = {}
        self._by_owner: dict[str, dict[str, set[ObjectKey]]] = {}  # kind -> owner uid -> keys
        self._handlers: dict[str, list[ChangeHandler]] = {}
        self.synced = asyncio.Event()

    # ------------------------------------------------------------------ ObjectSink

    def apply(self, document: dict[str, Any]) -> None:
        kind = document.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ValueError("an object without a kind cannot be cached")
        key = _key_of(document)
        if not key[1]:
            raise ValueError(f"a {kind} without metadata.name cannot be cached")
        objects = self._objects.setdefault(kind, {})
        old = objects.get(key)
        objects[key] = document
        self._index_owners(kind, key, old, document)
        self._notify(kind, old, document)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        key: ObjectKey = (namespace or None, name)
        old = self._objects.get(kind, {}).pop(key, None)
        if old is None:
            return
        self._index_owners(kind, key, old, None)
        self._notify(kind, old, None)

    def mark_loaded(self) -> None:
        self.synced.set()

    # --------------------------------------------------------------------- reads

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self._objects.get(kind, {}).get((namespace or None, name))

    def list(
        self, kind: str, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> builtins.list[dict[str, Any]]:
        found = []
        for (ns, _), document in self._objects.get(kind, {}).items():
            if namespace is not None and ns != namespace:
                continue
            if labels and not labels_match(document, labels):
                continue
            found.append(document)
        return found

    def owned_by(self, kind: str, owner_uid: str) -> builtins.list[dict[str, Any]]:
        """The ``kind`` objects with an ownerReference to ``owner_uid``."""
        objects = self._objects.get(kind, {})
        keys = self._by_owner.get(kind, {}).get(owner_uid, ())
        return [objects[key] for key in sorted(keys, key=lambda k: (k[0] or "", k[1])) if key in objects]

    def kinds(self) -> builtins.list[str]:
        return sorted(self._objects)

    # ------------------------------------------------------------------ handlers

    def on_change(self, kind: str, handler: ChangeHandler) -> None:
        """Call ``handler(old, new)`` after every change of a ``kind`` object (``new`` None: deleted)."""
        self._handlers.setdefault(kind, []).append(handler)

    def _notify(self, kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for handler in self._handlers.get(kind, ()):
            try:
                handler(old, new)
            except Exception:  # one broken handler must not stop the mirror or the other handlers
                log.exception("change handler for %s failed", kind)

    def _index_owners(self, kind: str, key: ObjectKey, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        before = _owner_uids(old) if old is not None else set()
        after = _owner_uids(new) if new is not None else set()
        if before == after:
            return
        index = self._by_owner.setdefault(kind, {})
        for uid in before - after:
            keys = index.get(uid)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[uid]
        for uid in after - before:
            index.setdefault(uid, set()).add(key)
