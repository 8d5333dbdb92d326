"""metav1.Condition lists as Kubernetes controllers keep them.

``lastTransitionTime`` moves only when a condition's status flips; reason, message and
``observedGeneration`` are updated in place. ``set_condition`` answers whether anything changed,
so a reconciler writes only a difference.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping, Sequence
from typing import Any


def rfc3339(epoch_seconds: float) -> str:
    """Kubernetes' metav1.Time spelling (second precision, UTC, "Z")."""
    moment = datetime.datetime.fromtimestamp(epoch_seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def find_condition(conditions: Sequence[Mapping[str, Any]] | None, kind: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions or () if c.get("type") == kind), None)


def condition_true(document: Mapping[str, Any], kind: str) -> bool:
    condition = find_condition((document.get("status") or {}).get("conditions"), kind)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    *,
    generation: int | None,
    now: float,
) -> bool:
    """Set ``kind`` in ``conditions`` (in place); True if the list changed."""
    wanted = "True" if status else "False"
    message = message[:32768]  # the API's limit on a condition message
    for index, existing in enumerate(conditions):
        if existing.get("type") != kind:
            continue
        updated = dict(existing)
        if existing.get("status") != wanted:
            updated["lastTransitionTime"] = rfc3339(now)
        updated.update(status=wanted, reason=reason, message=message)
        if generation is not None:
            updated["observedGeneration"] = generation
        if updated == existing:
            return False
        conditions[index] = updated
        return True
    condition: dict[str, Any] = {
        "type": kind,
        "status": wanted,
        "reason": reason,
        "message": message,
        "lastTransitionTime": rfc3339(now),
    }
    if generation is not None:
        condition["observedGeneration"] = generation
    conditions.append(condition)
    return True


def conditions_of(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A private copy of the object's status.conditions, to change and write back."""
    return copy.deepcopy(list((document.get("status") or {}).get("conditions") or []))
