"""``metadata.managedFields``: which field manager owns which fields of an object.

Entries are ``{manager, operation (Apply|Update), apiVersion, time, fieldsType: FieldsV1,
fieldsV1[, subresource]}``, one per manager, operation and subresource, as the real server writes
them. Server-side apply (``server_side_apply``) writes the applier's entry; every other write
records an ``Update``: a create makes every field it sets its manager's, an update the fields it
added or changed (taking them from every other manager), and fields it removed leave everyone.
The manager is ``fieldManager``, else the client's User-Agent up to the first ``/`` (``Python``
for aiohttp, ``kubectl`` ...). A write that omits ``managedFields`` keeps the stored ones; an
entry left owning nothing is dropped. The server's own writes (garbage collection, seeding)
name no manager and only keep what is there.

The paths never tracked are the real server's: apiVersion, kind and the metadata the server sets
(name, namespace, uid, resourceVersion, generation, creationTimestamp, managedFields); and on a
kind with a ``/status`` subresource, ``status`` for writes to the object and everything but
``status`` for writes to the subresource (the parts each one resets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .field_sets import MISSING, Path, Schema, children, fields_of, from_fields_v1, to_fields_v1, value_at
from .kinds import ResourceType
from .records import timestamp
from .schemas import kind_schema

APPLY, UPDATE = "Apply", "Update"
UNTRACKED: tuple[Path, ...] = (
    ("f:apiVersion",),
    ("f:kind",),
    ("f:metadata",),
    *(
        ("f:metadata", f"f:{name}")
        for name in ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "selfLink")
    ),
    ("f:metadata", "f:managedFields"),
)


@dataclass
class ManagerEntry:
    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str = field(default_factory=timestamp)
    fields: set[Path] = field(default_factory=set)

    def is_for(self, manager: str, operation: str, subresource: str) -> bool:
        return (self.manager, self.operation, self.subresource) == (manager, operation, subresource)

    def to_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.fields),
        }
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def manager_of(query: Mapping[str, str], user_agent: str) -> str:
    """The request's field manager, as the real server names it when the client gives none."""
    return query.get("fieldManager") or user_agent.split("/", 1)[0][:128]


def read_entries(obj: Mapping[str, Any]) -> list[ManagerEntry]:
    entries = []
    for raw in (obj.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(raw, dict):
            continue
        entries.append(
            ManagerEntry(
                manager=str(raw.get("manager") or ""),
                operation=str(raw.get("operation") or UPDATE),
                api_version=str(raw.get("apiVersion") or ""),
                subresource=str(raw.get("subresource") or ""),
                time=str(raw.get("time") or timestamp()),
                fields=from_fields_v1(raw.get("fieldsV1")),
            )
        )
    return entries


def write_entries(obj: dict[str, Any], entries: list[ManagerEntry]) -> None:
    """The entries that own something; none at all leaves ``managedFields`` out, as the real server does."""
    kept = [entry.to_dict() for entry in entries if entry.fields]
    if kept:
        obj["metadata"]["managedFields"] = kept
    else:
        obj["metadata"].pop("managedFields", None)


def tracked_fields(rtype: ResourceType, obj: Any, subresource: str = "") -> set[Path]:
    """The paths ``obj`` occupies that a write through ``subresource`` ('' or 'status') may own."""
    paths = fields_of(obj, kind_schema(rtype))
    if rtype.status_subresource:
        if subresource == "status":
            return {p for p in paths if p[:1] == ("f:status",)}
        paths = {p for p in paths if p[:1] != ("f:status",)}
    return {p for p in paths if p not in UNTRACKED}


def changed_paths(schema: Schema, paths: set[Path], before: Any, after: Any) -> set[Path]:
    """The paths among ``paths`` whose value differs between ``before`` and ``after``
    (an object's presence for a path holding an object: its fields are paths of their own).

    One walk of ``after`` beside ``before``, skipping every part the two hold alike."""
    changed: set[Path] = set()
    seen: set[Path] = set()
    _walk_changes(before, after, schema, (), paths, changed, seen)
    # not walked: inside a part held alike (unchanged), or no longer in ``after`` (changed)
    changed.update(path for path in paths - seen if value_at(after, schema, path) is MISSING)
    return changed


def _walk_changes(
    old: Any, new: Any, schema: Schema, path: Path, paths: set[Path], changed: set[Path], seen: set[Path]
) -> None:
    if path in paths:
        seen.add(path)
        both_objects = isinstance(old, dict) and isinstance(new, dict) and old and new
        if not both_objects and (old is MISSING or old != new):
            changed.add(path)
    if old is not MISSING and old == new:
        return
    before = {element: child for element, child, _ in children(old, schema)} if old is not MISSING else {}
    for element, child, child_schema in children(new, schema):
        _walk_changes(before.get(element, MISSING), child, child_schema, (*path, element), paths, changed, seen)


def _differing(obj: Mapping[str, Any], other: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of ``obj`` (top-level fields, and metadata's) that ``other`` does not hold alike:
    the only ones a write can take or remove fields in, so the rest need not be walked."""
    part = {key: value for key, value in obj.items() if key != "metadata" and other.get(key) != value}
    metadata, others = obj.get("metadata") or {}, other.get("metadata") or {}
    part["metadata"] = {
        key: value for key, value in metadata.items() if key != "managedFields" and others.get(key) != value
    }
    return part


def record_create(rtype: ResourceType, obj: dict[str, Any], manager: str | None) -> None:
    """A create that is not an apply: every field it sets is its manager's (``Update``); with no
    manager (the server's own write) the object gets no entries."""
    obj["metadata"].pop("managedFields", None)
    if manager:
        write_entries(obj, [ManagerEntry(manager, UPDATE, rtype.api_version, fields=tracked_fields(rtype, obj))])


def record_update(
    rtype: ResourceType, old: Mapping[str, Any], new: dict[str, Any], manager: str | None, subresource: str = ""
) -> None:
    """Track a write that is not an apply on an object that has entries (``new`` gets its entries);
    with no ``manager`` (the server's own writes) the entries are only kept."""
    metadata = new.setdefault("metadata", {})
    if metadata.get("managedFields") is None:
        given = (old.get("metadata") or {}).get("managedFields")
        if not given and not manager:
            return
        metadata["managedFields"] = given or []
    if not manager:
        return
    entries = read_entries(new)
    schema = kind_schema(rtype)
    old_part, new_part = _differing(old, new), _differing(new, old)
    before, after = tracked_fields(rtype, old_part, subresource), tracked_fields(rtype, new_part, subresource)
    taken = changed_paths(schema, after, old_part, new_part)
    removed = before - after
    mine = next((e for e in entries if e.is_for(manager, UPDATE, subresource)), None)
    if taken and mine is None:
        mine = ManagerEntry(manager, UPDATE, rtype.api_version, subresource)
        entries.append(mine)
    for entry in entries:
        entry.fields -= removed
        if entry is not mine:
            entry.fields -= taken
    if mine is not None and taken:
        mine.fields |= taken
        mine.time = timestamp()
    write_entries(new, entries)
