"""The subset of jq that KWOK Stage selectors and ``*From`` fields use, and Go's ParseDuration.

KWOK evaluates ``matchExpressions[].key`` and ``expressionFrom`` with gojq. Stages in practice
use paths (``.status.phase``, ``.metadata.annotations["k"]``), iteration (``.items.[]``,
``.items[]``) and ``select(.type == "Ready")`` joined by ``|``. That subset is implemented here
with gojq's behaviour: a missing key gives ``null``; iterating ``null`` is an error, and KWOK
turns an error into "no result". Anything else is refused when the stage is loaded, so a
simulation never silently disagrees with a real KWOK cluster.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


class QueryError(ValueError):
    """A jq expression outside the supported subset."""


class _IterateError(Exception):
    """jq's runtime error (iterating a scalar); KWOK treats the whole query as no result."""


@dataclass(frozen=True, slots=True)
class _Key:
    name: str


@dataclass(frozen=True, slots=True)
class _Iterate:
    pass


@dataclass(frozen=True, slots=True)
class _Select:
    path: tuple[_Key | _Iterate, ...]
    equals: Any
    negate: bool


_Step = _Key | _Iterate | _Select

_IDENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")
_BRACKET_KEY = re.compile(r"\.?\[\s*(\"(?:[^\"\\]|\\.)*\")\s*\]")
_ITERATE = re.compile(r"\.?\[\s*\]")
_SELECT = re.compile(r"select\s*\(\s*(.+?)\s*(==|!=)\s*(.+?)\s*\)\s*$")


def _parse_path(text: str, source: str) -> tuple[_Key | _Iterate, ...]:
    text = text.strip()
    if text == ".":
        return ()
    if not text.startswith("."):
        raise QueryError(f"unsupported jq expression {source!r}: a path must start with '.'")
    steps: list[_Key | _Iterate] = []
    position = 0
    while position < len(text):
        if match := _ITERATE.match(text, position):
            steps.append(_Iterate())
        elif match := _BRACKET_KEY.match(text, position):
            steps.append(_Key(json.loads(match.group(1))))
        elif match := _IDENT.match(text, position):
            steps.append(_Key(match.group(1)))
        else:
            raise QueryError(
                f"unsupported jq expression {source!r} at {text[position:]!r}: "
                'supported are .field, ["key"], [] and select(PATH == VALUE) joined by |'
            )
        position = match.end()
    return tuple(steps)


@lru_cache(maxsize=512)
def compile_query(source: str) -> tuple[_Step, ...]:
    steps: list[_Step] = []
    for part in source.split("|"):
        part = part.strip()
        if part.startswith("select"):
            match = _SELECT.match(part)
            if match is None:
                raise QueryError(f"unsupported jq expression {source!r}: cannot read {part!r}")
            try:
                literal = json.loads(match.group(3))
            except json.JSONDecodeError:
                raise QueryError(
                    f"unsupported jq expression {source!r}: {match.group(3)!r} is not a JSON literal"
                ) from None
            steps.append(_Select(_parse_path(match.group(1), source), literal, match.group(2) == "!="))
        else:
            steps.extend(_parse_path(part, source))
    return tuple(steps)


def _walk(values: list[Any], path: tuple[_Key | _Iterate, ...]) -> list[Any]:
    for step in path:
        out: list[Any] = []
        for value in values:
            if isinstance(step, _Key):
                if value is None:
                    out.append(None)
                elif isinstance(value, dict):
                    out.append(value.get(step.name))
                else:
                    raise _IterateError
            elif isinstance(value, list):
                out.extend(value)
            elif isinstance(value, dict):
                out.extend(value.values())
            else:
                raise _IterateError
        values = out
    return values


@lru_cache(maxsize=512)
def _plain_path(source: str) -> tuple[str, ...] | None:
    """The keys of a query that is only ``.a.b["c"]`` steps (delay and weight sources); else None."""
    steps = compile_query(source)
    if all(isinstance(step, _Key) for step in steps):
        return tuple(step.name for step in steps if isinstance(step, _Key))
    return None


def run_query(source: str, data: Any) -> list[Any] | None:
    """Outputs of ``source`` on ``data``; ``None`` where gojq would raise (KWOK: no result)."""
    names = _plain_path(source)
    if names is not None:
        # the common case, one output: the same rules as _walk's _Key step without the lists
        value = data
        for name in names:
            if isinstance(value, dict):
                value = value.get(name)
            elif value is not None:
                return None
        return [value]
    steps = compile_query(source)
    values: list[Any] = [data]
    try:
        for step in steps:
            if isinstance(step, _Select):
                kept = []
                for value in values:
                    results = _walk([value], step.path)
                    if any((result == step.equals) != step.negate for result in results):
                        kept.append(value)
                values = kept
            else:
                values = _walk(values, (step,))
    except _IterateError:
        return None
    return values


# ------------------------------------------------------------------------------ Go durations

_GO_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_GO_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


@lru_cache(maxsize=65536)
def parse_go_duration(text: str) -> int | None:
    """Nanoseconds for a Go duration string ("1h30m", "1.5s", "300ms"); ``None`` if invalid."""
    digits = text[:-2]
    if text.endswith("ms") and 0 < len(digits) <= 9 and digits.isascii() and digits.isdigit():
        # whole milliseconds, the simulator's own annotations: the parse below gives the same
        # (a float holds these exactly), without the regular expression
        return int(digits) * 1_000_000
    body = text
    sign = 1
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        return None
    total = 0.0
    position = 0
    while position < len(body):
        match = _GO_PART.match(body, position)
        if match is None:
            return None
        total += float(match.group(1)) * _GO_UNITS_NS[match.group(2)]
        position = match.end()
    return sign * round(total)
