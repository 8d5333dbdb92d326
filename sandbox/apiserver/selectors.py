"""Label and field selectors as the API server parses them from a list or watch query.

Label selectors take the full syntax: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``,
``a notin (x)``, ``a`` (exists) and ``!a`` (does not exist), joined by commas. Field selectors
take ``=``, ``==`` and ``!=`` on ``metadata.name``, ``metadata.namespace`` and the fields the
resource type declares (``spec.nodeName`` for Pods, ...); any other field is a 400, as on the
real server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ApiError

Predicate = Callable[[Mapping[str, Any]], bool]

_REQUIREMENT = re.compile(
    r"""^\s*(?:
        (?P<not_exists>!\s*(?P<ne_key>[^\s,!=()]+))
      | (?P<set_key>[^\s,!=()]+)\s+(?P<set_op>in|notin)\s*\((?P<values>[^)]*)\)
      | (?P<cmp_key>[^\s,!=()]+)\s*(?P<cmp_op>==|=|!=)\s*(?P<value>[^\s,!=()]*)
      | (?P<exists>[^\s,!=()]+)
    )\s*$""",
    re.VERBOSE,
)


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside ``( )``."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "exists":
            return self.key in labels
        if self.operator == "!":
            return self.key not in labels
        if self.operator in ("=", "in"):
            return value in self.values
        return value not in self.values  # "!=" and "notin" also match a missing label


def parse_label_selector(text: str | None) -> Callable[[Mapping[str, str]], bool]:
    """A predicate over an object's labels; raises ``ApiError`` 400 on bad syntax."""
    requirements: list[LabelRequirement] = []
    for requirement in _split_top_level(text or ""):
        match = _REQUIREMENT.match(requirement)
        if match is None:
            raise ApiError.bad_request(
                f"unable to parse requirement: {requirement.strip()!r} in labelSelector {text!r}"
            )
        if match["not_exists"]:
            requirements.append(LabelRequirement(match["ne_key"], "!"))
        elif match["set_key"]:
            values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
            requirements.append(LabelRequirement(match["set_key"], match["set_op"], values))
        elif match["cmp_key"]:
            operator = "!=" if match["cmp_op"] == "!=" else "="
            requirements.append(LabelRequirement(match["cmp_key"], operator, frozenset({match["value"]})))
        else:
            requirements.append(LabelRequirement(match["exists"], "exists"))
    return lambda labels: all(r.matches(labels) for r in requirements)


# field labels that are not the object's path to the field (an Event's "source" is its source.component)
FIELD_PATHS = {"source": "source.component"}


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in FIELD_PATHS.get(path, path).split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(text: str | None, supported: tuple[str, ...]) -> Predicate:
    """A predicate over a whole object; raises ``ApiError`` 400 for fields the type does not index."""
    if not text:
        return lambda obj: True
    allowed = ("metadata.name", "metadata.namespace", *supported)
    checks: list[tuple[str, bool, str]] = []  # (field path, equal?, value)
    for requirement in _split_top_level(text):
        match = re.match(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*(\S*)\s*$", requirement)
        if match is None:
            raise ApiError.bad_request(f"invalid selector: {requirement.strip()!r} in fieldSelector {text!r}")
        path, operator, value = match.groups()
        if path not in allowed:
            raise ApiError.bad_request(f"field label not supported: {path}; supported: {', '.join(allowed)}")
        checks.append((path, operator != "!=", value))
    return lambda obj: all((_field_value(obj, path) == value) == equal for path, equal, value in checks)
