"""KWOK Stages (kwok.x-k8s.io/v1alpha1) read from files and played over virtual time.

The simulator uses a Stage exactly as the KWOK controller does (pkg/utils/lifecycle):

- **selector**: a stage with no selector matches nothing; an empty one matches everything;
  ``matchLabels``/``matchAnnotations`` are equality selectors; ``matchExpressions`` run a jq
  query (``kwok_query``) with In / NotIn / Exists / DoesNotExist, where a query that errors or
  yields ``null`` fails In/Exists and passes NotIn/DoesNotExist.
- **weight**: among matching stages one is picked at random in proportion to ``weight`` (or
  ``weightFrom``); a zero total picks uniformly.
- **delay** (``Stage.Delay``): no ``delay`` means none. ``durationFrom`` overrides
  ``durationMilliseconds`` (a time string gives ``t - now``, otherwise Go ``ParseDuration``;
  a query that yields ``null`` or an unparsable value means "no delay"). With a jitter:
  if ``jitter <= duration`` the delay **is the jitter**, without randomness; otherwise
  ``duration + Int63n(jitter - duration)`` nanoseconds.
- **next**: ``delete: true`` deletes the object; otherwise ``statusTemplate`` is applied as a
  status patch. The Go template is not executed: its YAML skeleton is read (top-level fields,
  ``phase``, and the ``type``/``status`` of literal conditions), which is all a selector can
  observe in the stage chains KWOK ships. Stage chains advance one stage per change, like
  KWOK's watch events; a stage whose patch changes nothing ends the chain.

Stages are written in the ``next`` form that KWOK v0.7 reads (v0.8 deprecates it in favour of
``steps``, which is refused here with a clear message rather than half-understood).
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from simulations.errors import SimulationInputError
from simulations.kwok_query import QueryError, compile_query, parse_go_duration, run_query
from simulations.yamlsource import SourceDocument, load_documents

STAGE_API_VERSION = "kwok.x-k8s.io/v1alpha1"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
POD_COMPLETE_DELAY_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"
POD_COMPLETE_JITTER_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/jitter-delay"
DEFAULT_STAGES_DIR = Path(__file__).resolve().parent.parent / "manifests" / "kwok" / "stages"

# Virtual time 0 is this instant, for durationFrom expressions that yield a timestamp.
SIMULATION_EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_TOP_LEVEL_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s*:\s*(.*)$")
_TEMPLATE_ACTION = re.compile(r"{{.*?}}")


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
        duration = _duration_from(self.duration_ms, self.duration_from, view, now)
        if duration is None:
            return None
        if self.jitter_ms is None and self.jitter_from is None:
            return duration, None
        jitter = _duration_from(self.jitter_ms, self.jitter_from, view, now)
        return duration, jitter

    def delay_seconds(self, view: dict[str, Any], now: float, rng: random.Random) -> float:
        bounds = self.delay_bounds_ns(view, now)
        return 0.0 if bounds is None else draw_delay_ns(bounds[0], bounds[1], rng) / 1e9


def draw_delay_ns(duration: int, jitter: int | None, rng: random.Random) -> int:
    """KWOK's jitter rule (lifecycle.Stage.Delay), in nanoseconds."""
    if jitter is None:
        return duration
    if jitter <= duration:
        return jitter
    return duration + rng.randrange(jitter - duration)


def _duration_from(milliseconds: int | None, source: str | None, view: dict[str, Any], now: float) -> int | None:
    default = None if milliseconds is None else milliseconds * 1_000_000
    if source is None:
        return default
    out = run_query(source, view)
    if out is None:
        return None
    if not out:
        return default
    value = out[0]
    if not isinstance(value, str) or not value:
        return None
    parsed = _delay_text(value)
    if not isinstance(parsed, dt.datetime):
        return parsed
    virtual_now = SIMULATION_EPOCH + dt.timedelta(seconds=now)
    return round((parsed - virtual_now).total_seconds() * 1e9)


@lru_cache(maxsize=65536)
def _delay_text(value: str) -> int | dt.datetime | None:
    """A delay value read: a moment (RFC 3339 with a zone), else Go duration nanoseconds (None: invalid).

    Cached because a gang's delay and jitter annotations usually carry the same text. A Go
    duration ends in a unit (ns, us, ms, s, m, h) and an ISO moment in a digit or ``Z``, so
    text ending in s/m/h skips the ``fromisoformat`` attempt that could only fail.
    """
    if value[-1] in "smh":
        return parse_go_duration(value)
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return parse_go_duration(value)
    if moment.tzinfo is None:
        return parse_go_duration(value)
    return moment


# ------------------------------------------------------------------------------------- parsing


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
    expressions: list[MatchExpression] = []
    match_labels: dict[str, str] = {}
    match_annotations: dict[str, str] = {}
    if selector is not None:
        _expect(document, ("spec", "selector"), selector, dict, "a mapping")
        match_labels = {str(k): str(v) for k, v in (selector.get("matchLabels") or {}).items()}
        match_annotations = {str(k): str(v) for k, v in (selector.get("matchAnnotations") or {}).items()}
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
            if operator not in _OPERATORS:
                raise document.error((*path, "operator"), f"must be one of {', '.join(_OPERATORS)}, got {operator!r}")
            values = tuple(str(v) for v in item.get("values") or [])
            if operator in ("In", "NotIn") and not values:
                raise document.error((*path, "values"), f"operator {operator} needs at least one value")
            if operator in ("Exists", "DoesNotExist") and values:
                raise document.error((*path, "values"), f"operator {operator} takes no values")
            expressions.append(MatchExpression(key, operator, values))

    delay = spec.get("delay")
    duration_ms = jitter_ms = None
    duration_from = jitter_from = None
    if delay is not None:
        _expect(document, ("spec", "delay"), delay, dict, "a mapping")
        if "durationMilliseconds" in delay:
            duration_ms = _expect(
                document,
                ("spec", "delay", "durationMilliseconds"),
                delay["durationMilliseconds"],
                int,
                "an integer number of milliseconds",
            )
        else:
            duration_ms = 0  # KWOK's delayDuration starts at zero when only durationFrom is given
        if "jitterDurationMilliseconds" in delay:
            jitter_ms = _expect(
                document,
                ("spec", "delay", "jitterDurationMilliseconds"),
                delay["jitterDurationMilliseconds"],
                int,
                "an integer number of milliseconds",
            )
        duration_from = _expression_from(document, ("spec", "delay", "durationFrom"), delay.get("durationFrom"))
        jitter_from = _expression_from(
            document, ("spec", "delay", "jitterDurationFrom"), delay.get("jitterDurationFrom")
        )
        for field_name, value in (("durationMilliseconds", duration_ms), ("jitterDurationMilliseconds", jitter_ms)):
            if value is not None and value < 0:
                raise document.error(("spec", "delay", field_name), f"must not be negative, got {value}")

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
        match_expressions=tuple(expressions),
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


@dataclass(frozen=True, slots=True)
class PodOutcome:
    """When a pod became Ready and when it stopped, from ``start`` on (seconds)."""

    ready_after: float | None
    finished_after: float | None
    phase: str
    deleted: bool
    stages: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GangOutcome:
    """The same for a gang of identical pods: ready when the last is Ready, done when the last ends."""

    ready_after: float | None
    finished_after: float | None
    succeeded: bool


# metadata fields the chain key covers in full, whatever a selector reads of them
_METADATA_IN_KEY = frozenset({"labels", "annotations", "deletionTimestamp"})


@dataclass(frozen=True, slots=True)
class _ChainStep:
    stage: Stage
    becomes_ready: bool
    terminal_phase: str | None
    ends_chain: bool
    reads_pod: bool  # the delay comes from the pod (durationFrom/jitterDurationFrom)
    bounds: tuple[int, int | None] | None  # the delay bounds when it does not


class PodLifecycle:
    """Runs the Pod stages of a stage set over one pod's life, in virtual time."""

    MAX_STEPS = 64

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = [s for s in stages if s.kind == "Pod"]
        if not self.stages:
            raise SimulationInputError("stages", None, "spec.resourceRef.kind", "no Stage drives Pods")
        self._selector_annotations: set[str] = set()
        self._selectors_read_all_annotations = False
        # other paths selectors read (".metadata.name", ".metadata.ownerReferences.[].kind"...):
        # the chain key holds what each yields on the pod, so pods a selector tells apart never
        # share a chain, while fields no selector reads (a job's own name) do not split them
        self._selector_paths: list[str] = []
        for stage in self.stages:
            for expression in stage.match_expressions:
                parts = [p for p in expression.key.split(".") if p]
                top = parts[0].split("[")[0] if parts else ""
                covered = top in ("spec", "status") or (
                    top == "metadata" and len(parts) > 1 and parts[1].split("[")[0] in _METADATA_IN_KEY
                )
                if not covered and expression.key not in self._selector_paths:
                    self._selector_paths.append(expression.key)
        self._chains: dict[tuple[Any, ...], list[_ChainStep] | None] = {}

    def _pick(self, view: dict[str, Any], rng: random.Random) -> Stage | None:
        matched = [s for s in self.stages if s.matches(view)]
        if len(matched) <= 1:
            return matched[0] if matched else None
        weights = [s.weight_of(view) for s in matched]
        readable = [(s, w) for s, w in zip(matched, weights, strict=True) if w is not None]
        if not readable:
            return matched[rng.randrange(len(matched))]
        total = sum(w for _, w in readable if w > 0)
        if total == 0:
            pool = matched if len(readable) == len(matched) else [s for s, _ in readable]
            return pool[rng.randrange(len(pool))]
        offset = rng.randrange(total)
        for stage, weight in readable:
            if weight <= 0:
                continue
            offset -= weight
            if offset < 0:
                return stage
        return matched[-1]

    def run_pod(self, pod: dict[str, Any], start: float, rng: random.Random) -> PodOutcome:
        view = copy.deepcopy(pod)
        view.setdefault("status", {}).setdefault("phase", "Pending")
        elapsed = 0.0
        ready_after: float | None = None
        names: list[str] = []
        for _ in range(self.MAX_STEPS):
            stage = self._pick(view, rng)
            if stage is None:
                break
            elapsed += stage.delay_seconds(view, start + elapsed, rng)
            names.append(stage.name)
            if stage.effect.delete:
                phase = view["status"].get("phase", "Pending")
                return PodOutcome(ready_after, elapsed, phase, True, tuple(names))
            if not stage.effect.apply(view):
                break
            if ready_after is None and _is_ready(view):
                ready_after = elapsed
            if view["status"].get("phase") in ("Succeeded", "Failed"):
                return PodOutcome(ready_after, elapsed, view["status"]["phase"], False, tuple(names))
        return PodOutcome(ready_after, None, view["status"].get("phase", "Pending"), False, tuple(names))

    def _chain_key(self, pod: dict[str, Any]) -> tuple[Any, ...]:
        """What the selectors can see of a fresh pod; the delay annotations' values are left out."""
        metadata = pod.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        labels = metadata.get("labels")
        if self._selectors_read_all_annotations:
            seen = tuple(sorted(annotations.items()))
        elif self._selector_annotations:
            seen = tuple(sorted([(k, v) for k, v in annotations.items() if k in self._selector_annotations]))
        else:
            seen = ()
        return (
            tuple(sorted(labels.items())) if labels else (),
            seen,
            tuple(sorted(annotations)),
            "deletionTimestamp" in metadata,
            repr(pod.get("spec")),
            repr(pod.get("status")),
            tuple([repr(run_query(path, pod)) for path in self._selector_paths]),
        )

    def _chain(self, pod: dict[str, Any]) -> list[_ChainStep] | None:
        """The stages a fresh pod walks through when every step has exactly one match, else None."""
        key = self._chain_key(pod)
        if key in self._chains:
            return self._chains[key]
        view = copy.deepcopy(pod)
        view.setdefault("status", {}).setdefault("phase", "Pending")
        chain: list[_ChainStep] | None = []
        was_ready = False
        for _ in range(self.MAX_STEPS):
            matched = [s for s in self.stages if s.matches(view)]
            if len(matched) != 1 or any(
                source is not None and not source.lstrip().startswith(".metadata")
                for source in (matched[0].duration_from, matched[0].jitter_from)
            ):
                chain = None if matched else chain
                break
            assert chain is not None
            stage = matched[0]
            changed = not stage.effect.delete and stage.effect.apply(view)
            phase = view["status"].get("phase")
            terminal = phase if phase in ("Succeeded", "Failed") else None
            ready = _is_ready(view)
            reads_pod = stage.duration_from is not None or stage.jitter_from is not None
            chain.append(
                _ChainStep(
                    stage,
                    ready and not was_ready,
                    terminal,
                    stage.effect.delete or not changed,
                    reads_pod,
                    # without a *From source the bounds depend on neither the pod nor the time
                    None if reads_pod else stage.delay_bounds_ns({}, 0.0),
                )
            )
            was_ready = was_ready or ready
            if stage.effect.delete or not changed or terminal is not None:
                break
        self._chains[key] = chain
        return chain

    def run_gang(self, pod: dict[str, Any], count: int, start: float, rng: random.Random) -> GangOutcome:
        """``count`` identical pods, each with its own jitter draws (KWOK delays run per pod).

        While exactly one stage matches at each step the pods walk the same chain, so the chain
        is found once per kind of pod and only the delays are drawn per pod; a weighted choice
        between several matching stages sends every pod down its own walk.
        """
        chain = self._chain(pod)
        if chain is None:
            return self._gang_pod_by_pod(pod, count, start, rng)
        elapsed = [0.0] * count
        ready_after: float | None = None
        for step in chain:
            bounds = step.stage.delay_bounds_ns(pod, start + min(elapsed)) if step.reads_pod else step.bounds
            if bounds is not None:
                duration, jitter = bounds
                if jitter is None or jitter <= duration:
                    fixed = draw_delay_ns(duration, jitter, rng) / 1e9
                    elapsed = [e + fixed for e in elapsed]
                else:
                    # draw_delay_ns's random branch, inlined: one draw per pod of a large gang
                    span, randrange = jitter - duration, rng.randrange
                    elapsed = [e + (duration + randrange(span)) / 1e9 for e in elapsed]
            if step.stage.effect.delete:
                return GangOutcome(ready_after, max(elapsed), False)
            if step.becomes_ready:
                ready_after = max(elapsed)
            if step.terminal_phase is not None:
                return GangOutcome(ready_after, max(elapsed), step.terminal_phase == "Succeeded")
            if step.ends_chain:
                break
        return GangOutcome(ready_after, None, False)

    def _gang_pod_by_pod(self, pod: dict[str, Any], count: int, start: float, rng: random.Random) -> GangOutcome:
        outcomes = [self.run_pod(pod, start, rng) for _ in range(count)]
        ready = [o.ready_after for o in outcomes if o.ready_after is not None]
        finished = [o.finished_after for o in outcomes if o.finished_after is not None]
        return GangOutcome(
            max(ready) if len(ready) == count else None,
            max(finished) if len(finished) == count else None,
            all(o.phase == "Succeeded" and not o.deleted for o in outcomes),
        )


def _is_ready(view: dict[str, Any]) -> bool:
    for condition in view.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def simulated_pod(
    name: str,
    namespace: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    owner_kind: str = "Job",
    restart_policy: str = "Never",
) -> dict[str, Any]:
    """The pod as KWOK's selectors see it right after the scheduler bound it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": dict(annotations),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": owner_kind, "name": name}],
        },
        "spec": {"restartPolicy": restart_policy, "containers": [{"name": "trainer"}]},
        "status": {"phase": "Pending"},
    }
