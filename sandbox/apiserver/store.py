"""The fake API server's object store: one etcd-like revision counter and an event history.

Every write bumps the single global ``resourceVersion`` (as etcd's revision does), records a
watch event, and hands it to the open watches. The history is bounded: a watch that asks to
resume from a revision older than the oldest retained event gets ``410 Expired``, as it would
after etcd compaction. All operations are synchronous, so each one is atomic on the event loop.

Stored objects are immutable snapshots: a write builds a new object (copying only what it
changes) and never alters one already stored, so the history's events, watches and observers
share the stored objects instead of copying them; callers outside get copies (``get``, the
results of writes). A write copies a document about once, where it used to copy it six times.
"""

from __future__ import annotations

import random
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .defaults import prepare_for_create, prepare_for_update
from .errors import ApiError
from .garbage_collection import GarbageCollection
from .kinds import ResourceType
from .managed_fields import record_create, record_update
from .ownership import PROPAGATION_POLICIES, OwnerIndex, default_propagation
from .paging import (
    INCONSISTENT,
    Continue,
    ListPage,
    decode_continue,
    expired_continue,
    page,
    snapshot,
    too_large,
)
from .patches import apply_patch
from .records import Key, StoredEvent, Subscription, clone, timestamp
from .subscriptions import WatchSubscriptions
from .write_checks import missing_resource_version, prepare, validate_object

DEFAULT_HISTORY = 1000
# the alphabet of generateName suffixes (apimachinery's utilrand: no vowels, no look-alike digits)
NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _spec_part(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What ``metadata.generation`` tracks: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Store(GarbageCollection, WatchSubscriptions):
    def __init__(self, history_limit: int = DEFAULT_HISTORY, *, collect_dangling: bool = False) -> None:
        self.resource_version = 0
        self.objects: dict[ResourceType, dict[Key, dict[str, Any]]] = {}
        self.history: deque[StoredEvent] = deque()
        self.history_limit = history_limit
        # Events up to and including this revision are gone; resuming from before it is a 410.
        self.compacted_through = 0
        self.subscriptions: set[Subscription] = set()
        # In-process observers see every committed write in order, whatever faults do to the
        # watches (an auditor, a benchmark's clock); they must not write to the store, and the
        # event's objects are the store's own snapshots: read them, never change them.
        self.observers: list[Callable[[StoredEvent], None]] = []
        self.owners = OwnerIndex()
        # deletions waiting on finalizers: uid -> the propagation policy to apply once the object goes
        self.pending_propagation: dict[str, str] = {}
        self.collected = 0  # dependents the garbage collector deleted
        self.collect_dangling = collect_dangling

    # -------------------------------------------------------------------------- internals

    def _bucket(self, rtype: ResourceType) -> dict[Key, dict[str, Any]]:
        return self.objects.setdefault(rtype, {})

    def _commit(
        self,
        rtype: ResourceType,
        key: Key,
        event_type: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Store ``obj`` (a private object, frozen from now on) and record its event; a copy back."""
        self.resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self.resource_version)
        if event_type == "DELETED":
            self._bucket(rtype).pop(key, None)
        else:
            self._bucket(rtype)[key] = obj
        self.owners.track((rtype, key), old, None if event_type == "DELETED" else obj)
        event = StoredEvent(self.resource_version, event_type, rtype, key[0], obj, old)
        self.history.append(event)
        while len(self.history) > self.history_limit:
            self.compacted_through = self.history.popleft().resource_version
        for subscription in self.subscriptions:
            if subscription.wants(event):
                subscription.queue.put_nowait(event)
        for observe in self.observers:
            observe(event)
        return clone(obj)

    def _stored(self, rtype: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        found = self._bucket(rtype).get((namespace or "", name))
        if found is None:
            raise ApiError.not_found(rtype.plural, name, rtype.group)
        return found

    def _require_namespace(self, rtype: ResourceType, namespace: str | None) -> None:
        if not rtype.namespaced:
            return
        namespaces = next((t for t in self.objects if t.kind == "Namespace" and t.group == ""), None)
        if namespaces is None or ("", namespace or "") not in self.objects[namespaces]:
            raise ApiError.not_found("namespaces", namespace or "")

    def _envelope(
        self, rtype: ResourceType, body: Mapping[str, Any], namespace: str | None, *, deep: bool = True
    ) -> dict[str, Any]:
        """``body`` checked and completed (apiVersion, kind, namespace): a deep copy, or with
        ``deep=False`` a copy of its top level and metadata only (for a status write, which
        keeps nothing else of the body)."""
        obj = clone(dict(body)) if deep else dict(body)
        if obj.get("apiVersion", rtype.api_version) != rtype.api_version or obj.get("kind", rtype.kind) != rtype.kind:
            raise ApiError.bad_request(
                f"the API version in the data ({obj.get('apiVersion')}) or kind ({obj.get('kind')}) does not "
                f"match the expected {rtype.api_version} {rtype.kind}"
            )
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        metadata = obj.get("metadata")
        if metadata is None:
            metadata = obj["metadata"] = {}
        if not isinstance(metadata, dict):
            raise ApiError(422, f"{rtype.kind}.metadata: must be an object")
        if not deep:
            metadata = obj["metadata"] = dict(metadata)
        if rtype.namespaced:
            given = metadata.get("namespace")
            if given not in (None, "", namespace):
                raise ApiError.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        return obj

    # ------------------------------------------------------------------------- operations

    def create(
        self,
        rtype: ResourceType,
        namespace: str | None,
        body: Mapping[str, Any],
        *,
        dry_run: bool = False,
        applied: bool = False,  # a server-side apply's: its managedFields are kept
        manager: str | None = None,  # who writes: the managedFields entry (None: the server's own write)
        warnings: list[str] | None = None,  # where a pruned field's warning goes
    ) -> dict[str, Any]:
        obj = self.creatable(rtype, namespace, body, applied=applied, warnings=warnings)
        metadata = obj["metadata"]
        key = (namespace or "", str(metadata["name"]))
        if key in self._bucket(rtype):
            raise ApiError.already_exists(rtype.plural, key[1], rtype.group)
        if not applied:
            record_create(rtype, obj, manager)
        if dry_run:
            return obj
        created = self._commit(rtype, key, "ADDED", obj, None)
        self._collect_if_dangling(rtype, key, obj)
        return created

    def get(self, rtype: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        return clone(self._stored(rtype, namespace, name))

    def items(self, rtype: ResourceType, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Stored objects of a type (not copies: read-only use), in name order."""
        for (ns, _), obj in sorted(self._bucket(rtype).items()):
            if namespace is None or ns == namespace:
                yield obj

    def list_objects(
        self,
        rtype: ResourceType,
        namespace: str | None,
        matches: Callable[[Mapping[str, Any]], bool] = lambda obj: True,
    ) -> tuple[list[dict[str, Any]], int]:
        page = self.list_page(rtype, namespace, matches)
        return page.items, page.resource_version

    def list_page(
        self,
        rtype: ResourceType,
        namespace: str | None,
        matches: Callable[[Mapping[str, Any]], bool] = lambda obj: True,
        *,
        limit: int | None = None,
        continue_token: str | None = None,
        count_remaining: bool = True,
    ) -> ListPage:
        """A list, or one page of it: ``limit`` items from where ``continue_token`` left off.

        Later pages are read at the first page's revision (see ``paging``); ``count_remaining``
        is False when selectors filter the list, since the real server leaves the count unset then.
        """
        bucket = self._bucket(rtype)
        position = decode_continue(continue_token) if continue_token else Continue(INCONSISTENT, "")
        if position.resource_version == INCONSISTENT:
            # a first page, or the rest of an expired list (its token's "rv: -1"): read now
            position = Continue(self.resource_version, position.start_after)
            objects = sorted(((k, o) for k, o in bucket.items() if namespace in (None, k[0])), key=lambda ko: ko[0])
        else:
            if position.resource_version > self.resource_version:
                raise too_large(position.resource_version, self.resource_version)
            if position.resource_version < self.compacted_through:
                raise expired_continue(position.start_after)
            objects = snapshot(bucket, self.history, rtype, namespace, position.resource_version)
        return page(objects, position, matches, limit, count_remaining=count_remaining)

    def update(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        body: Mapping[str, Any],
        *,
        status: bool = False,
        dry_run: bool = False,
        manager: str | None = None,  # who writes: the managedFields entry (None: the server's own write)
        warnings: list[str] | None = None,  # where a pruned field's warning goes
    ) -> dict[str, Any]:
        if status and not rtype.status_subresource:
            raise ApiError(404, f"the server could not find the requested resource ({rtype.plural}/status)")
        stored = self._stored(rtype, namespace, name)
        obj = self._envelope(rtype, body, namespace, deep=not status)
        metadata = obj["metadata"]
        if status and "status" in obj:
            obj["status"] = clone(obj["status"])  # pruned below: never the caller's
        prepare(rtype, obj, warnings, only="status" if status else None)
        if metadata.get("name", name) != name:
            raise ApiError.bad_request(
                f"the name of the object ({metadata.get('name')}) does not match the name on the URL ({name})"
            )
        given_version = metadata.get("resourceVersion")
        if not given_version and not rtype.allows_unconditional_update:
            raise missing_resource_version(rtype, name)
        if given_version and str(given_version) != stored["metadata"]["resourceVersion"]:
            raise ApiError.conflict(rtype.plural, name, rtype.group)
        updated = _status_written(stored, obj) if status else _main_written(rtype, stored, obj)
        prepare_for_update(rtype, updated, stored)
        validate_object(rtype, updated)
        record_update(rtype, stored, updated, manager, "status" if status else "")
        if dry_run:
            return clone(updated)
        key = (namespace or "", name)
        if updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get("finalizers"):
            policy = self.pending_propagation.pop(str(stored["metadata"].get("uid")), default_propagation(rtype))
            return self._remove(rtype, key, updated, stored, policy)
        return self._commit(rtype, key, "MODIFIED", updated, stored)

    def replace_stored(
        self, rtype: ResourceType, namespace: str | None, name: str, obj: Mapping[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        """Write a whole object, spec and status together, as a registry's own subresource does
        (``pods/binding``); the caller has checked it."""
        stored = self._stored(rtype, namespace, name)
        if dry_run:
            return clone(dict(obj))
        return self._commit(rtype, (namespace or "", name), "MODIFIED", clone(dict(obj)), stored)

    def patch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        *,
        status: bool = False,
        dry_run: bool = False,
        manager: str | None = None,
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        if status and not rtype.status_subresource:
            raise ApiError(404, f"the server could not find the requested resource ({rtype.plural}/status)")
        # the patch functions build a new object (a merge patch copies only the paths it changes)
        patched = apply_patch(rtype, content_type, self._stored(rtype, namespace, name), patch)
        return self.update(
            rtype, namespace, name, patched, status=status, dry_run=dry_run, manager=manager, warnings=warnings
        )

    def delete(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        preconditions: Mapping[str, Any] | None = None,
        *,
        propagation: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete an object; its dependents are collected per ``propagation`` (the kind's default if None)."""
        if propagation is not None and propagation not in PROPAGATION_POLICIES:
            raise ApiError(
                422,
                f"DeleteOptions.propagationPolicy: Unsupported value: {propagation!r}: supported values: "
                + ", ".join(f'"{p}"' for p in PROPAGATION_POLICIES),
            )
        stored = self._stored(rtype, namespace, name)
        for field_name in ("resourceVersion", "uid"):
            wanted = (preconditions or {}).get(field_name)
            if wanted and str(wanted) != stored["metadata"].get(field_name):
                raise ApiError(
                    409,
                    f"Precondition failed: {field_name} in precondition: {wanted}, "
                    f"{field_name} in object meta: {stored['metadata'].get(field_name)}",
                    reason="Conflict",
                )
        if dry_run:
            return clone(stored)
        return self._delete_stored(rtype, (namespace or "", name), propagation or default_propagation(rtype))

    def creatable(
        self,
        rtype: ResourceType,
        namespace: str | None,
        body: Mapping[str, Any],
        *,
        applied: bool = False,
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        """``body`` as it would be created (named, stamped, pruned, defaulted and validated: what the
        registry's BeforeCreate does before validating webhooks see it); nothing is stored."""
        obj = self._envelope(rtype, body, namespace)
        metadata = obj["metadata"]
        if metadata.get("resourceVersion"):
            raise ApiError(500, "Internal error occurred: resourceVersion should not be set on objects to be created")
        self._require_namespace(rtype, namespace)
        prepare(rtype, obj, warnings)
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = self._generated_name(rtype, namespace, str(metadata["generateName"]))
        metadata["uid"] = str(uuid.uuid4())
        metadata["creationTimestamp"] = timestamp()
        if rtype.generation:
            metadata["generation"] = 1
        else:
            metadata.pop("generation", None)
        prepare_for_create(rtype, obj)
        for transient in ("deletionTimestamp", "deletionGracePeriodSeconds", *(() if applied else ("managedFields",))):
            metadata.pop(transient, None)
        if rtype.status_on_create == "drop" and rtype.status_subresource:
            obj.pop("status", None)
        elif rtype.status_on_create == "pending-pod":
            obj["status"] = {"phase": "Pending"}
        elif rtype.status_on_create == "active-namespace":
            obj["status"] = {"phase": "Active"}
            metadata.setdefault("labels", {})["kubernetes.io/metadata.name"] = metadata.get("name")
        validate_object(rtype, obj)
        return obj

    def _generated_name(self, rtype: ResourceType, namespace: str | None, prefix: str) -> str:
        # the real server gives up after a few collisions with 409 AlreadyExists; so does this one
        for _ in range(8):
            name = prefix + "".join(random.choices(NAME_SUFFIX_ALPHABET, k=5))
            if (namespace or "", name) not in self._bucket(rtype):
                return name
        raise ApiError.already_exists(rtype.plural, prefix, rtype.group)


def _status_written(stored: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    """The status subresource changes status and nothing else: the stored snapshot's other parts
    are shared, its metadata copied (the commit stamps a new resourceVersion on it)."""
    updated = dict(stored)
    updated["metadata"] = dict(stored["metadata"])
    if "status" in obj:
        updated["status"] = obj["status"]
    else:
        updated.pop("status", None)
    return updated


def _main_written(rtype: ResourceType, stored: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    """An update of the main resource: the server keeps identity and, with a status subresource,
    the stored status; the generation moves when the spec does."""
    metadata, kept = obj["metadata"], stored["metadata"]
    for immutable in ("uid", "creationTimestamp", "deletionTimestamp", "generation", "name", "namespace"):
        if immutable in kept:
            metadata[immutable] = kept[immutable]
        else:
            metadata.pop(immutable, None)
    if rtype.status_subresource:
        if "status" in stored:
            obj["status"] = stored["status"]  # shared: snapshots are never changed
        else:
            obj.pop("status", None)
    if rtype.generation and _spec_part(obj) != _spec_part(stored):
        metadata["generation"] = int(kept.get("generation", 1)) + 1
    return obj
