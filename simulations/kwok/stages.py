"""KWOK Stage objects: what one stage matches, how long it waits and what it does; parsed from files."""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulations.errors import SimulationInputError
from simulations.kwok.constants import DEFAULT_STAGES_DIR, STAGE_API_VERSION
from simulations.kwok.delays import draw_delay_ns, duration_from
from simulations.kwok.query import QueryError, compile_query, run_query
from simulations.kwok.selectors import OPERATORS, MatchExpression
from simulations.yamlsource import SourceDocument, load_documents

_TOP_LEVEL_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s*:\s*(.*)$")
_TEMPLATE_ACTION = re.compile(r"{{.*?}}")


@dataclass(frozen=True, slots=True)
class StageEffect:
    """What a stage's ``next`` does to the object, as far as selectors can observe."""

    delete: bool
    phase: str | None
    conditions: tuple[tuple[str, str], ...] | None  # (type, status); None = not patched
    fields: tuple[str, ...]  # other top-level status fields the template sets

    def apply(self, view: dict[str, Any]) -> bool:
        """Patch ``view`` in place; True when anything changed."""
        status: dict[str, Any] = view.setdefault("status", {})
        before = copy.deepcopy(status)
        for name in self.fields:
            status.setdefault(name, f"<{name}>")
        if self.conditions is not None:
            status["conditions"] = [{"type": kind, "status": value} for kind, value in self.conditions]
        if self.phase is not None:
            status["phase"] = self.phase
        return status != before


@dataclass(frozen=True)
class Stage:
    name: str
    kind: str  # resourceRef.kind
    api_group: str
    selector_present: bool
    match_labels: dict[str, str]
    match_annotations: dict[str, str]
    match_expressions: tuple[MatchExpression, ...]
    weight: int
    weight_from: str | None
    has_delay: bool
    duration_ms: int | None
    duration_from: str | None
    jitter_ms: int | None
    jitter_from: str | None
    effect: StageEffect
    immediate_next_stage: bool = False
    source: str = ""
    referenced_annotations: frozenset[str] | None = field(default=None)

    # -------------------------------------------------------------------------------- matching

    def matches(self, view: dict[str, Any]) -> bool:
        if not self.selector_present:
            return False
        metadata = view.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        annotations = metadata.get("annotations") or {}
        if any(annotations.get(k) != v for k, v in self.match_annotations.items()):
            return False
        return all(expression.matches(view) for expression in self.match_expressions)

    def weight_of(self, view: dict[str, Any]) -> int | None:
        """KWOK's IntFrom: the expression's value, else the spec weight; None when unreadable."""
        if self.weight_from is None:
            return self.weight
        out = run_query(self.weight_from, view)
        if out is None:
            return None
        if not out:
            return self.weight
        value = out[0]
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return int(value)
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                return None
        return None

    # ---------------------------------------------------------------------------------- delays

    def delay_bounds_ns(self, view: dict[str, Any], now: float) -> tuple[int, int | None] | None:
        """``(duration, jitter)`` in nanoseconds before randomness; None means no delay at all."""
        if not self.has_delay:
            return None
        duration = duration_from(self.duration_ms, self.duration_from, view, now)
        if duration is None:
            return None
        if self.jitter_ms is None and self.jitter_from is None:
            return duration, None
        jitter = duration_from(self.jitter_ms, self.jitter_from, view, now)
        return duration, jitter

    def delay_seconds(self, view: dict[str, Any], now: float, rng: random.Random) -> float:
        bounds = self.delay_bounds_ns(view, now)
        return 0.0 if bounds is None else draw_delay_ns(bounds[0], bounds[1], rng) / 1e9


def _status_effect(template: str) -> tuple[str | None, tuple[tuple[str, str], ...] | None, tuple[str, ...]]:
    phase: str | None = None
    conditions: list[tuple[str, str]] | None = None
    fields: list[str] = []
    current: str | None = None
    entry: dict[str, str] = {}

    def flush() -> None:
        if current == "conditions" and conditions is not None and "type" in entry and "{{" not in entry["type"]:
            conditions.append((entry["type"], entry.get("status", "")))
        entry.clear()

    for raw in template.splitlines():
        line = raw.rstrip()
        if not line.strip() or (line.strip().startswith("{{") and line.strip().endswith("}}")):
            continue
        if not line.startswith((" ", "\t", "-")):
            flush()
            match = _TOP_LEVEL_KEY.match(line)
            if match is None:
                continue
            current = match.group(1)
            value = _TEMPLATE_ACTION.sub("", match.group(2)).strip().strip("\"'")
            if current == "phase":
                phase = value or None
            elif current == "conditions":
                conditions = []
            else:
                fields.append(current)
            continue
        if current != "conditions":
            continue
        stripped = line.strip()
        if stripped.startswith("- "):
            flush()
            stripped = stripped[2:]
        key, _, value = stripped.partition(":")
        if key.strip() in ("type", "status"):
            entry[key.strip()] = value.strip().strip("\"'")
    flush()
    return phase, None if conditions is None else tuple(conditions), tuple(fields)


def _expect(
    document: SourceDocument, path: tuple[str | int, ...], value: Any, kind: type | tuple[type, ...], what: str
) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise document.error(path, f"must be {what}, got {value!r}")
    return value


def _expression_from(document: SourceDocument, path: tuple[str | int, ...], value: Any) -> str | None:
    if value is None:
        return None
    _expect(document, path, value, dict, "a mapping with expressionFrom")
    source = value.get("expressionFrom")
    if not isinstance(source, str):
        raise document.error((*path, "expressionFrom"), "must be a jq expression string")
    try:
        compile_query(source)
    except QueryError as error:
        raise document.error((*path, "expressionFrom"), str(error)) from None
    return source


def parse_stage(document: SourceDocument) -> Stage:
    data = document.data
    if not isinstance(data, dict):
        raise document.error((), "a Stage must be a mapping")
    if data.get("kind") != "Stage":
        raise document.error(("kind",), f"expected kind Stage, got {data.get('kind')!r}")
    if data.get("apiVersion") != STAGE_API_VERSION:
        raise document.error(("apiVersion",), f"expected {STAGE_API_VERSION}, got {data.get('apiVersion')!r}")
    name = str((data.get("metadata") or {}).get("name") or "")
    if not name:
        raise document.error(("metadata", "name"), "a Stage needs a name")
    spec = _expect(document, ("spec",), data.get("spec"), dict, "a mapping")
    ref = _expect(document, ("spec", "resourceRef"), spec.get("resourceRef"), dict, "a mapping with kind")
    kind = ref.get("kind")
    if not isinstance(kind, str) or not kind:
        raise document.error(("spec", "resourceRef", "kind"), "must name a kind (Pod, Node, ...)")
    if "steps" in spec:
        raise document.error(
            ("spec", "steps"), "the v0.8 `steps` form is not supported; write the stage with `next` (KWOK v0.7)"
        )
    selector = spec.get("selector")
    match_labels, match_annotations, expressions = _selector(document, selector)
    delay = spec.get("delay")
    duration_ms, jitter_ms, duration_from, jitter_from = _delay(document, delay)
    weight = spec.get("weight", 0)
    _expect(document, ("spec", "weight"), weight, int, "an integer")
    weight_from = _expression_from(document, ("spec", "weightFrom"), spec.get("weightFrom"))
    next_spec = spec.get("next") or {}
    _expect(document, ("spec", "next"), next_spec, dict, "a mapping")
    template = next_spec.get("statusTemplate") or ""
    _expect(document, ("spec", "next", "statusTemplate"), template, str, "a string (Go template)")
    phase, conditions, fields = _status_effect(template)
    effect = StageEffect(bool(next_spec.get("delete", False)), phase, conditions, fields)

    return Stage(
        name=name,
        kind=kind,
        api_group=str(ref.get("apiGroup") or "v1"),
        selector_present=selector is not None,
        match_labels=match_labels,
        match_annotations=match_annotations,
        match_expressions=expressions,
        weight=weight,
        weight_from=weight_from,
        has_delay=delay is not None,
        duration_ms=duration_ms,
        duration_from=duration_from,
        jitter_ms=jitter_ms,
        jitter_from=jitter_from,
        effect=effect,
        immediate_next_stage=bool(spec.get("immediateNextStage", False)),
        source=f"{document.file}:{document.line_of(())}",
    )


def _selector(
    document: SourceDocument, selector: Any
) -> tuple[dict[str, str], dict[str, str], tuple[MatchExpression, ...]]:
    """spec.selector: matchLabels, matchAnnotations and matchExpressions (jq keys compiled now)."""
    if selector is None:
        return {}, {}, ()
    _expect(document, ("spec", "selector"), selector, dict, "a mapping")
    match_labels = {str(k): str(v) for k, v in (selector.get("matchLabels") or {}).items()}
    match_annotations = {str(k): str(v) for k, v in (selector.get("matchAnnotations") or {}).items()}
    expressions: list[MatchExpression] = []
    for index, item in enumerate(selector.get("matchExpressions") or []):
        path: tuple[str | int, ...] = ("spec", "selector", "matchExpressions", index)
        _expect(document, path, item, dict, "a mapping with key/operator/values")
        key = item.get("key")
        if not isinstance(key, str):
            raise document.error((*path, "key"), "must be a jq expression string")
        try:
            compile_query(key)
        except QueryError as error:
            raise document.error((*path, "key"), str(error)) from None
        operator = item.get("operator")
        if operator not in OPERATORS:
            raise document.error((*path, "operator"), f"must be one of {', '.join(OPERATORS)}, got {operator!r}")
        values = tuple(str(v) for v in item.get("values") or [])
        if operator in ("In", "NotIn") and not values:
            raise document.error((*path, "values"), f"operator {operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            raise document.error((*path, "values"), f"operator {operator} takes no values")
        expressions.append(MatchExpression(key, operator, values))
    return match_labels, match_annotations, tuple(expressions)


def _delay(document: SourceDocument, delay: Any) -> tuple[int | None, int | None, str | None, str | None]:
    """spec.delay: (duration ms, jitter ms, durationFrom, jitterDurationFrom); all None without one."""
    if delay is None:
        return None, None, None, None
    _expect(document, ("spec", "delay"), delay, dict, "a mapping")
    milliseconds = "an integer number of milliseconds"
    duration_ms: int | None = 0  # KWOK's delayDuration starts at zero when only durationFrom is given
    jitter_ms: int | None = None
    if "durationMilliseconds" in delay:
        path = ("spec", "delay", "durationMilliseconds")
        duration_ms = _expect(document, path, delay["durationMilliseconds"], int, milliseconds)
    if "jitterDurationMilliseconds" in delay:
        path = ("spec", "delay", "jitterDurationMilliseconds")
        jitter_ms = _expect(document, path, delay["jitterDurationMilliseconds"], int, milliseconds)
    duration_from = _expression_from(document, ("spec", "delay", "durationFrom"), delay.get("durationFrom"))
    jitter_from = _expression_from(document, ("spec", "delay", "jitterDurationFrom"), delay.get("jitterDurationFrom"))
    for field_name, value in (("durationMilliseconds", duration_ms), ("jitterDurationMilliseconds", jitter_ms)):
        if value is not None and value < 0:
            raise document.error(("spec", "delay", field_name), f"must not be negative, got {value}")
    return duration_ms, jitter_ms, duration_from, jitter_from


def load_stages(paths: Iterable[str | Path]) -> list[Stage]:
    """Stages from files and directories (every ``*.yaml``/``*.yml`` in a directory, sorted)."""
    stages: list[Stage] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
            if not files:
                raise SimulationInputError(str(path), None, "", "no Stage files (*.yaml) in this directory")
        else:
            files = [path]
        for file in files:
            stages.extend(parse_stage(document) for document in load_documents(file))
    return stages


def default_stages() -> list[Stage]:
    return load_stages([DEFAULT_STAGES_DIR])


# ---------------------------------------------------------------------------------- lifecycle
