"""KWOK selector expressions: a jq query with In / NotIn / Exists / DoesNotExist."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulations.kwok.query import run_query

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class MatchExpression:
    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, view: dict[str, Any]) -> bool:
        data = run_query(self.key, view)
        if data is None:  # the query errored: KWOK's Requirement.Matches sees nil
            return self.operator in ("NotIn", "DoesNotExist")
        if self.operator in ("Exists", "DoesNotExist"):
            exists = any(value is not None for value in data)
            return exists if self.operator == "Exists" else not exists
        hit = any(_scalar_text(value) in self.values for value in data)
        return hit if self.operator == "In" else not hit


def _scalar_text(value: Any) -> str | None:
    # KWOK's hasValue compares strings, booleans and Go ints (not JSON floats).
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return None
