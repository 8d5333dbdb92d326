"""Status conditions as the real controllers write them, and small helpers over status."""

from __future__ import annotations

import datetime
from typing import Any


def now_text() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    if obj is None:
        return None
    for found in (obj.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return None


def is_true(obj: dict[str, Any] | None, kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"


def set_condition(
    conditions: list[dict[str, Any]], kind: str, status: bool, reason: str, message: str, **extra: Any
) -> list[dict[str, Any]]:
    """``conditions`` with ``kind`` set; the transition time changes only when the status flips."""
    wanted = "True" if status else "False"
    result: list[dict[str, Any]] = []
    placed = False
    for current in conditions:
        if current.get("type") != kind:
            result.append(current)
            continue
        placed = True
        changed = current.get("status") != wanted
        updated = {**current, "status": wanted, "reason": reason, "message": message, **extra}
        if changed:
            updated["lastTransitionTime"] = now_text()
        result.append(updated)
    if not placed:
        result.append(
            {
                "type": kind,
                "status": wanted,
                "reason": reason,
                "message": message,
                "lastTransitionTime": now_text(),
                **extra,
            }
        )
    return result
