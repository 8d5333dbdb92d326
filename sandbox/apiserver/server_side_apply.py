"""Server-side apply (``PATCH`` with ``application/apply-patch+yaml``), as kube-apiserver runs it.

An apply sends the manager's whole intent (``kubectl apply --server-side``: ``fieldManager=kubectl``).
On a missing object it creates it; on an existing one it merges the intent into the live object
(objects by key, keyed lists by their keys, set lists as sets, atomic lists and scalars replaced),
removes the fields the same manager applied before and no longer does (unless another manager
owns them too), and makes the intent's fields the manager's (``managed_fields``). A field another
manager owns whose value the apply would change is a conflict: 409 with the real server's message
and causes, unless ``force=true``, which takes the field over. An object with no entries yet is
owned, for this, by ``before-first-apply``, as on the real server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ApiError
from .field_errors import invalid_object, required
from .field_sets import MISSING, Path, Schema, child_schema, is_atomic, item_element, path_text
from .kinds import ResourceType
from .managed_fields import (
    APPLY,
    UPDATE,
    ManagerEntry,
    changed_paths,
    read_entries,
    tracked_fields,
    write_entries,
)
from .records import clone, timestamp
from .schemas import kind_schema

BEFORE_FIRST_APPLY = "before-first-apply"


def checked_intent(rtype: ResourceType, body: Any, manager: str | None) -> dict[str, Any]:
    """The applied configuration, checked as the real server checks it before anything else."""
    if not manager:
        raise invalid_object(
            "PatchOptions.meta.k8s.io",
            "",
            [required("fieldManager", "is required for apply patch")],
            group="meta.k8s.io",
            kind="PatchOptions",
        )
    if not isinstance(body, dict):
        raise ApiError.bad_request("error decoding YAML: the applied configuration must be an object")
    for part in ("apiVersion", "kind"):
        if not body.get(part):
            raise ApiError.bad_request(f"error decoding patch: {part} must be set in an apply configuration")
    if (body["apiVersion"], body["kind"]) != (rtype.api_version, rtype.kind):
        raise ApiError.bad_request(
            f"the API version in the data ({body['apiVersion']}) or kind ({body['kind']}) does not "
            f"match the expected {rtype.api_version} {rtype.kind}"
        )
    intent = clone(body)
    (intent.get("metadata") or {}).pop("managedFields", None)
    return intent


def merge(live: Any, intent: Any, schema: Schema) -> Any:
    """``intent`` merged into ``live`` (a new value; ``live`` is not changed)."""
    if live is MISSING or is_atomic(schema, intent) or type(live) is not type(intent):
        return clone(intent)
    if isinstance(intent, dict):
        merged = dict(live)
        for key, value in intent.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = merge(merged.get(key, MISSING), value, child_schema(schema, key)[0])
        return merged
    items: Schema = schema.get("items") or {}
    result = list(live)
    position = {item_element(schema, item): index for index, item in enumerate(result)}
    for item in intent:
        element = item_element(schema, item)
        if element in position:
            result[position[element]] = merge(result[position[element]], item, items)
        else:
            position[element] = len(result)
            result.append(clone(item))
    return result


def _remove(value: Any, schema: Schema, path: Path) -> None:
    """Remove the field or list item at ``path`` from ``value`` (in place)."""
    *parents, last = path
    for element in parents:
        if isinstance(value, dict) and element.startswith("f:"):
            schema, value = child_schema(schema, element[2:])[0], value.get(element[2:])
        elif isinstance(value, list):
            items = schema.get("items") or {}
            value = next((item for item in value if item_element(schema, item) == element), None)
            schema = items
        else:
            return
    if isinstance(value, dict) and last.startswith("f:"):
        value.pop(last[2:], None)
    elif isinstance(value, list):
        value[:] = [item for item in value if item_element(schema, item) != last]


def _conflict(found: list[tuple[ManagerEntry, Path]]) -> ApiError:
    def who(entry: ManagerEntry) -> str:
        text = f'"{entry.manager}"'
        if entry.subresource:
            text += f' with subresource "{entry.subresource}"'
        return f"{text} using {entry.api_version}" if entry.operation == UPDATE else text

    if len(found) == 1:
        entry, path = found[0]
        message = f"Apply failed with 1 conflict: conflict with {who(entry)}: {path_text(path)}"
    else:
        lines: list[str] = []
        for manager in sorted({who(entry) for entry, _ in found}):
            lines.append(f"conflicts with {manager}:")
            lines += [f"- {path_text(path)}" for entry, path in found if who(entry) == manager]
        message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {who(entry)}", "field": path_text(path)}
        for entry, path in found
    ]
    # the real server names no object here: its conflict error carries the causes only
    return ApiError(409, message, reason="Conflict", details={"causes": causes})


def apply(
    rtype: ResourceType,
    live: Mapping[str, Any] | None,
    intent: dict[str, Any],
    manager: str,
    *,
    force: bool = False,
    subresource: str = "",
) -> dict[str, Any]:
    """The object to store: ``intent`` created (``live`` None) or applied to ``live``, with managedFields."""
    schema = kind_schema(rtype)
    applied = tracked_fields(rtype, intent, subresource)
    if live is None:
        created = clone(intent)
        created.setdefault("metadata", {})
        write_entries(created, [ManagerEntry(manager, APPLY, rtype.api_version, subresource, fields=applied)])
        return created
    entries = read_entries(live) or [
        ManagerEntry(BEFORE_FIRST_APPLY, UPDATE, rtype.api_version, fields=tracked_fields(rtype, live))
    ]
    mine = next((e for e in entries if e.is_for(manager, APPLY, subresource)), None)
    others = [e for e in entries if e is not mine]
    merged: dict[str, Any] = clone(merge(live, intent, schema))
    owned_elsewhere = set().union(*(e.fields for e in others))
    # parents first: a removed list item takes its fields with it (they would not find it after)
    for path in sorted((mine.fields if mine else set()) - applied - owned_elsewhere, key=len):
        _remove(merged, schema, path)
    changed = changed_paths(schema, applied, live, merged)
    conflicts = [(entry, path) for entry in others for path in sorted(changed & entry.fields)]
    if conflicts and not force:
        raise _conflict(conflicts)
    for entry, path in conflicts:
        entry.fields.discard(path)
    if mine is None:
        mine = ManagerEntry(manager, APPLY, rtype.api_version, subresource)
        entries.append(mine)
    mine.fields, mine.api_version, mine.time = applied, rtype.api_version, timestamp()
    write_entries(merged, entries)
    return merged
