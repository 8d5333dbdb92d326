"""Kueue's TAS pod-set annotations, checked once: read the values and list every problem.

One checker, two outputs: the webhook turns each problem into a ``FieldError`` (its own message,
at the annotation's path), the engine turns the first one into a ValueError naming the pod set
(``scheduler.topology.model.pod_set_request_from_template``). A rule Kueue applies only when it
places the pods (the pod count a multiple of the slice size) is marked ``at_placement`` and left
out of the webhook's answer, as Kueue's webhook leaves it out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.kueue import (
    PODSET_GROUP_NAME,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY,
)
from scheduler.api.names import qualified_name_error

PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
MAX_SLICE_LAYERS = 3
_LEVEL_HINT = "use a node label that is a level of the flavor's Topology, e.g. network.topology.nvidia.com/block"


@dataclass(frozen=True)
class AnnotationProblem:
    """One broken rule. ``path`` is relative to the annotations ("" or ``[key]...``)."""

    path: str
    message: str  # the webhook's words
    engine: str  # the engine's words, a sentence that names the annotation
    at_placement: bool = False  # Kueue checks it when placing, not in its webhook


@dataclass(frozen=True)
class PodSetTopology:
    """What the annotations ask for (meaningful when there are no problems)."""

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_level: str | None = None
    slice_size: int = 1
    group: str | None = None


def _at(key: str) -> str:
    return f"[{key}]"


def _level_problem(value: str, key: str, path: str) -> list[AnnotationProblem]:
    problem = qualified_name_error(value)
    if problem is None:
        return []
    if not value.strip():
        engine = f"annotation {key} is empty; {_LEVEL_HINT}"
    else:
        engine = f"annotation {key}={value!r} is not a node label key ({problem}); {_LEVEL_HINT}"
    return [AnnotationProblem(path, f"must be a node label key: {problem}", engine)]


def _constraints_problems(raw: str, count: int) -> list[AnnotationProblem]:
    key = PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS
    base = _at(key)

    def problem(path: str, message: str) -> AnnotationProblem:
        return AnnotationProblem(path, message, f"annotation {key}{path[len(base) :]} {message}")

    try:
        layers: Any = json.loads(raw)
    except ValueError:
        return [problem(base, 'must be a JSON list such as [{"topology": "cloud.com/rack", "size": 4}]')]
    if not isinstance(layers, list) or not 1 <= len(layers) <= MAX_SLICE_LAYERS:
        return [problem(base, f"must be a JSON list of 1 to {MAX_SLICE_LAYERS} {{topology, size}} entries")]
    problems: list[AnnotationProblem] = []
    seen: set[str] = set()
    sizes: list[int] = []
    for i, layer in enumerate(layers):
        topology = layer.get("topology") if isinstance(layer, dict) else None
        size = layer.get("size") if isinstance(layer, dict) else None
        if not isinstance(topology, str):
            problems.append(problem(f"{base}[{i}].topology", "must be a node label key"))
        else:
            problems += _level_problem(topology, f"{key}[{i}].topology", f"{base}[{i}].topology")
            if topology in seen:
                problems.append(problem(f"{base}[{i}].topology", f"{topology!r} is listed twice"))
            seen.add(topology)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            problems.append(problem(f"{base}[{i}].size", f"must be an integer of at least 1, got {size!r}"))
            continue
        if i == 0 and size > count:
            problems.append(problem(f"{base}[{i}].size", f"must not exceed the pod set count {count}, got {size}"))
        if sizes and sizes[-1] % size != 0:
            problems.append(
                problem(
                    f"{base}[{i}].size", f"must evenly divide the size of the layer above ({sizes[-1]}), got {size}"
                )
            )
        sizes.append(size)
    return problems


def _exclusive_problems(annotations: Mapping[str, str]) -> list[AnnotationProblem]:
    present = [
        key
        for key in (PODSET_REQUIRED_TOPOLOGY, PODSET_PREFERRED_TOPOLOGY, PODSET_UNCONSTRAINED_TOPOLOGY)
        if key in annotations
    ]
    if len(present) <= 1:
        return []
    return [
        AnnotationProblem(
            "",
            f"must not set more than one of {', '.join(present)}; pick one",
            f"annotations {', '.join(present)} exclude each other; set only one of them",
        )
    ]


def _slice_problems(slice_level: str | None, slice_size: str | None, count: int) -> list[AnnotationProblem]:
    together = (
        f"annotations {PODSET_SLICE_REQUIRED_TOPOLOGY} and {PODSET_SLICE_SIZE} "
        "must be set together (a level label and a positive pod count)"
    )
    at_size = _at(PODSET_SLICE_SIZE)
    if slice_size is None:
        if slice_level is None:
            return []
        message = f"requires {PODSET_SLICE_SIZE} to be set too"
        return [AnnotationProblem(_at(PODSET_SLICE_REQUIRED_TOPOLOGY), message, together)]
    problems: list[AnnotationProblem] = []
    if slice_level is None:
        message = f"may only be set together with {PODSET_SLICE_REQUIRED_TOPOLOGY}"
        problems.append(AnnotationProblem(at_size, message, together))
    if not slice_size.isdigit() or int(slice_size) < 1:
        problems.append(
            AnnotationProblem(
                at_size,
                f"must be an integer of at least 1, got {slice_size!r}",
                f"annotation {PODSET_SLICE_SIZE}={slice_size!r} is not a positive integer",
            )
        )
    elif int(slice_size) > count:
        problems.append(
            AnnotationProblem(
                at_size,
                f"must not exceed the pod set count {count}, got {slice_size}",
                f"annotation {PODSET_SLICE_SIZE}={slice_size} exceeds the pod set count {count}",
            )
        )
    elif count % int(slice_size):
        problems.append(
            AnnotationProblem(
                at_size,
                f"must divide the pod set count {count}, got {slice_size}",
                f"count {count} is not a multiple of {PODSET_SLICE_SIZE}={slice_size}; "
                "use a slice size that divides the pod count",
                at_placement=True,
            )
        )
    return problems


def _group_problems(annotations: Mapping[str, str], group: str) -> list[AnnotationProblem]:
    at_group = _at(PODSET_GROUP_NAME)
    problems: list[AnnotationProblem] = []
    if PODSET_REQUIRED_TOPOLOGY not in annotations and PODSET_PREFERRED_TOPOLOGY not in annotations:
        problems.append(
            AnnotationProblem(
                at_group,
                f"requires {PODSET_REQUIRED_TOPOLOGY} or {PODSET_PREFERRED_TOPOLOGY}",
                f"annotation {PODSET_GROUP_NAME} needs {PODSET_REQUIRED_TOPOLOGY} "
                f"or {PODSET_PREFERRED_TOPOLOGY} on the same pod set",
            )
        )
    if PODSET_SLICE_REQUIRED_TOPOLOGY in annotations or PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS in annotations:
        problems.append(
            AnnotationProblem(
                at_group,
                "must not be combined with slice topology annotations",
                f"annotation {PODSET_GROUP_NAME} cannot be combined with slice topology annotations",
            )
        )
    if group.lstrip("-").isdigit():
        problems.append(
            AnnotationProblem(
                at_group,
                f"must not be a number, got {group!r}",
                f"annotation {PODSET_GROUP_NAME}={group!r} must be a non-numeric name",
            )
        )
    return problems


def check_podset_topology(annotations: Mapping[str, str], count: int) -> tuple[PodSetTopology, list[AnnotationProblem]]:
    """Kueue's TAS annotation rules for one pod set of ``count`` pods: the values and the problems
    (in the webhook's order; the placement-time rule last among the slice rules)."""
    required = annotations.get(PODSET_REQUIRED_TOPOLOGY)
    preferred = annotations.get(PODSET_PREFERRED_TOPOLOGY)
    unconstrained = annotations.get(PODSET_UNCONSTRAINED_TOPOLOGY)
    slice_level = annotations.get(PODSET_SLICE_REQUIRED_TOPOLOGY)
    slice_size = annotations.get(PODSET_SLICE_SIZE)
    group = annotations.get(PODSET_GROUP_NAME)
    constraints = annotations.get(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS)

    problems = _exclusive_problems(annotations)
    for key, value in (
        (PODSET_REQUIRED_TOPOLOGY, required),
        (PODSET_PREFERRED_TOPOLOGY, preferred),
        (PODSET_SLICE_REQUIRED_TOPOLOGY, slice_level),
    ):
        if value is not None:
            problems += _level_problem(value, key, _at(key))
    if unconstrained is not None and unconstrained not in ("true", "false"):
        problems.append(
            AnnotationProblem(
                _at(PODSET_UNCONSTRAINED_TOPOLOGY),
                f'must be "true" or "false", got {unconstrained!r}',
                f'annotation {PODSET_UNCONSTRAINED_TOPOLOGY}={unconstrained!r} is not a boolean; use "true" or "false"',
            )
        )
    problems += _slice_problems(slice_level, slice_size, count)
    if constraints is not None:
        if slice_level is not None or slice_size is not None:
            problems.append(
                AnnotationProblem(
                    _at(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS),
                    f"must not be set together with {PODSET_SLICE_REQUIRED_TOPOLOGY} or {PODSET_SLICE_SIZE}",
                    f"annotation {PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS} must not be set together with "
                    f"{PODSET_SLICE_REQUIRED_TOPOLOGY} or {PODSET_SLICE_SIZE}",
                )
            )
        problems += _constraints_problems(constraints, count)
    if group is not None:
        problems += _group_problems(annotations, group)
    size = int(slice_size) if slice_level is not None and slice_size is not None and slice_size.isdigit() else 1
    topology = PodSetTopology(required, preferred, unconstrained == "true", slice_level, size, group)
    return topology, problems
