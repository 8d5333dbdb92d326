"""A pod's life under KWOK Stages: the chain of stages it walks and when it is Ready and done."""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from simulations.errors import SimulationInputError
from simulations.kwok.delays import draw_delay_ns
from simulations.kwok.query import run_query
from simulations.kwok.stages import Stage


@dataclass(slots=True, init=False)
class PodOutcome:
    """When a pod became Ready and when it stopped, from ``start`` on (seconds)."""

    ready_after: float | None
    finished_after: float | None
    phase: str
    deleted: bool
    stages: tuple[str, ...]

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        ready_after: float | None,
        finished_after: float | None,
        phase: str,
        deleted: bool,
        stages: tuple[str, ...],
    ) -> None:
        self.ready_after = ready_after
        self.finished_after = finished_after
        self.phase = phase
        self.deleted = deleted
        self.stages = stages


@dataclass(slots=True, init=False)
class GangOutcome:
    """The same for a gang of identical pods: ready when the last is Ready, done when the last ends."""

    ready_after: float | None
    finished_after: float | None
    succeeded: bool

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        ready_after: float | None,
        finished_after: float | None,
        succeeded: bool,
    ) -> None:
        self.ready_after = ready_after
        self.finished_after = finished_after
        self.succeeded = succeeded


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
        # annotations whose values a selector reads (matchAnnotations, or a matchExpressions key
        # on one annotation): the chain key holds their values; a key reading annotations any
        # other way puts every annotation's value in it
        self._selector_annotations: set[str] = set()
        self._selectors_read_all_annotations = False
        # other paths selectors read (".metadata.name", ".metadata.ownerReferences.[].kind"...):
        # the chain key holds what each yields on the pod, so pods a selector tells apart never
        # share a chain, while fields no selector reads (a job's own name) do not split them
        self._selector_paths: list[str] = []
        for stage in self.stages:
            self._selector_annotations.update(stage.match_annotations)
            for expression in stage.match_expressions:
                if _reads_annotations(expression.key):
                    one = _one_annotation(expression.key)
                    if one is None:
                        self._selectors_read_all_annotations = True
                    else:
                        self._selector_annotations.add(one)
                parts = [p for p in expression.key.split(".") if p]
                top = parts[0].split("[")[0] if parts else ""
                covered = top in ("spec", "status") or (
                    top == "metadata" and len(parts) > 1 and parts[1].split("[")[0] in _METADATA_IN_KEY
                )
                if not covered and expression.key not in self._selector_paths:
                    self._selector_paths.append(expression.key)
        self._chains: dict[tuple[Any, ...], list[_ChainStep] | None] = {}
        # chains by the caller's pod template (``run_gang``'s ``template``), usable only while no
        # selector reads what the pods of one template may differ in
        self._template_chains: dict[Hashable, list[_ChainStep] | None] = {}
        self._selectors_read_identity = bool(
            self._selector_annotations
            or self._selectors_read_all_annotations
            or any(not path.rstrip().endswith((".kind", ".apiVersion")) for path in self._selector_paths)
        )

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

    def run_gang(
        self,
        pod: dict[str, Any],
        count: int,
        start: float,
        rng: random.Random,
        *,
        template: Hashable | None = None,
    ) -> GangOutcome:
        """``count`` identical pods, each with its own jitter draws (KWOK delays run per pod).

        While exactly one stage matches at each step the pods walk the same chain, so the chain
        is found once per kind of pod and only the delays are drawn per pod; a weighted choice
        between several matching stages sends every pod down its own walk.

        ``template`` names the template a caller builds many pods from (the simulator's one):
        pods passed with the same template must be equal but for their name, namespace, owners'
        names and annotation values. While no selector reads those, the chain is then found once
        per template rather than worked out from every pod.
        """
        chain = self._template_chain(template, pod) if template is not None else self._chain(pod)
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
                    # a random delay: one draw per pod (compiled, the call costs next to nothing)
                    elapsed = [e + draw_delay_ns(duration, jitter, rng) / 1e9 for e in elapsed]
            if step.stage.effect.delete:
                return GangOutcome(ready_after, max(elapsed), False)
            if step.becomes_ready:
                ready_after = max(elapsed)
            if step.terminal_phase is not None:
                return GangOutcome(ready_after, max(elapsed), step.terminal_phase == "Succeeded")
            if step.ends_chain:
                break
        return GangOutcome(ready_after, None, False)

    def _template_chain(self, template: Hashable, pod: dict[str, Any]) -> list[_ChainStep] | None:
        if self._selectors_read_identity:
            return self._chain(pod)
        if template in self._template_chains:
            return self._template_chains[template]
        chain = self._template_chains[template] = self._chain(pod)
        return chain

    def _gang_pod_by_pod(self, pod: dict[str, Any], count: int, start: float, rng: random.Random) -> GangOutcome:
        outcomes = [self.run_pod(pod, start, rng) for _ in range(count)]
        ready = [o.ready_after for o in outcomes if o.ready_after is not None]
        finished = [o.finished_after for o in outcomes if o.finished_after is not None]
        return GangOutcome(
            max(ready) if len(ready) == count else None,
            max(finished) if len(finished) == count else None,
            all(o.phase == "Succeeded" and not o.deleted for o in outcomes),
        )


_ONE_ANNOTATION = re.compile(r'^\s*\.metadata\.annotations(?:\["([^"\]]+)"\]|\.([A-Za-z_][A-Za-z0-9_]*))\s*$')


def _reads_annotations(key: str) -> bool:
    """Whether a selector key (a jq path) reads the pod's annotations."""
    return "annotations" in key


def _one_annotation(key: str) -> str | None:
    """The one annotation a selector key reads (``.metadata.annotations["a/b"]`` or
    ``.metadata.annotations.name``); None when it reads them some other way."""
    match = _ONE_ANNOTATION.match(key)
    if match is None:
        return None
    return match.group(1) or match.group(2)


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
