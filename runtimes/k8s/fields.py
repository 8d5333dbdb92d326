"""Unknown fields, as the API server's field validation reports them (``Warn`` by default).

A ``KubeModel`` keeps fields it does not know (so a round trip loses nothing), which also keeps a
misspelt field silently. :func:`unknown_fields` walks a parsed object and lists every field that
neither the model nor the upstream API defines, with the nearest known spelling. Models that
cover only part of an upstream type register the rest of its field names here
(:func:`register_upstream_fields`), so a real field this project does not model is never
reported. ``status`` is the server's and is not walked.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, get_args

from pydantic import AliasChoices, BaseModel

from runtimes.k8s.core import (
    Container,
    ContainerPort,
    NodeSpec,
    NodeStatus,
    PodSpec,
    ResourceRequirements,
    VolumeMount,
)
from runtimes.k8s.meta import KubeModel, ObjectMeta

FieldPath = tuple[str | int, ...]

_UPSTREAM_FIELDS: dict[type[BaseModel], frozenset[str]] = {}
# Server-written parts of an object: what a person writes is never judged there.
_NOT_WALKED = frozenset({"status"})


def register_upstream_fields(model: type[BaseModel], names: Iterable[str]) -> None:
    """Fields of the upstream type ``model`` stands for that the model itself does not declare."""
    _UPSTREAM_FIELDS[model] = _UPSTREAM_FIELDS.get(model, frozenset()) | frozenset(names)
    _known_names.cache_clear()
    _walked_fields.cache_clear()


def format_path(path: FieldPath) -> str:
    """``("spec", "podSets", 0, "count")`` as ``spec.podSets[0].count``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


@dataclass(frozen=True, slots=True)
class UnknownField:
    """One field neither trainyard nor the upstream API knows, with the nearest known spelling."""

    path: FieldPath
    suggestion: str | None = None

    @property
    def dotted(self) -> str:
        return format_path(self.path)

    def __str__(self) -> str:
        hint = f" (did you mean {self.suggestion}?)" if self.suggestion else ""
        return f'unknown field "{self.dotted}"{hint}'


@cache
def _known_names(model: type[BaseModel]) -> tuple[frozenset[str], dict[str, str]]:
    """(every accepted spelling, attribute -> wire name of each declared field)."""
    spellings: set[str] = set(_UPSTREAM_FIELDS.get(model, frozenset()))
    declared: dict[str, str] = {}
    for name, info in model.model_fields.items():
        wire = info.alias or name
        spellings.update((name, wire))
        if isinstance(info.validation_alias, AliasChoices):
            spellings.update(choice for choice in info.validation_alias.choices if isinstance(choice, str))
        elif isinstance(info.validation_alias, str):
            spellings.add(info.validation_alias)
        declared[name] = wire
    return frozenset(spellings), declared


@cache
def _walked_fields(model: type[BaseModel]) -> dict[str, str]:
    """Attribute -> wire name of the declared fields that can hold a model (the only ones an
    unknown field can hide below): a string, a number or a list of them is never walked."""
    _, declared = _known_names(model)
    return {
        name: wire
        for name, wire in declared.items()
        if wire not in _NOT_WALKED and _may_hold_model(model.model_fields[name].annotation)
    }


def _may_hold_model(annotation: Any) -> bool:
    if annotation is Any or annotation is object:
        return True
    if isinstance(annotation, type) and not get_args(annotation):
        return issubclass(annotation, BaseModel)
    return any(_may_hold_model(argument) for argument in get_args(annotation))


@cache
def _suggest(name: str, known: frozenset[str]) -> str | None:
    # camelCase wire names only: a snake_case attribute name is not what a person should write.
    candidates = [k for k in known if "_" not in k]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if close:
        return close[0]
    lowered = {k.lower(): k for k in candidates}
    return lowered.get(name.lower())


_MODEL_TYPES: dict[type, bool] = {}


def _is_model(cls: type) -> bool:
    # isinstance against a pydantic model class goes through ABCMeta's check; this walk asks it of
    # every value of every reviewed object, so the answer is kept per type
    answer = _MODEL_TYPES.get(cls)
    if answer is None:
        answer = _MODEL_TYPES[cls] = issubclass(cls, KubeModel)
    return answer


def _walks_into(value: Any) -> bool:
    cls = type(value)
    return cls is list or cls is dict or _is_model(cls)


def _walk(value: Any, path: FieldPath, found: list[UnknownField]) -> None:
    cls = type(value)
    if cls is list:
        for index, item in enumerate(value):
            if _walks_into(item):
                _walk(item, (*path, index), found)
    elif cls is dict:
        for key, item in value.items():
            if _is_model(type(item)):
                _walk(item, (*path, str(key)), found)
    elif isinstance(value, KubeModel):  # a model, as _is_model(cls) says; the check tells mypy so
        known, _ = _known_names(type(value))
        extra = value.__pydantic_extra__
        if extra:
            for key in extra:
                if key not in known:
                    found.append(UnknownField((*path, key), _suggest(key, known)))
        walked = _walked_fields(type(value))
        if walked:
            for name in value.model_fields_set:
                wire = walked.get(name)
                if wire is not None:
                    child = getattr(value, name)
                    if _walks_into(child):
                        _walk(child, (*path, wire), found)


def unknown_fields(obj: KubeModel) -> list[UnknownField]:
    """Every field of ``obj`` (recursively, ``status`` aside) that no schema defines."""
    found: list[UnknownField] = []
    _walk(obj, (), found)
    return found


def line_of(lines: Mapping[FieldPath, int], path: FieldPath, default: int) -> int:
    """The line of ``path`` or of its nearest parent that has one."""
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return default


# Kubernetes core types, beyond what runtimes.k8s models (k8s.io/api core/v1 and meta/v1).
register_upstream_fields(ObjectMeta, ("selfLink", "deletionGracePeriodSeconds", "managedFields"))
register_upstream_fields(
    Container,
    (
        "envFrom",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext",
        "stdin",
        "stdinOnce",
        "tty",
        "resizePolicy",
        "restartPolicy",
        "restartPolicyRules",
        "volumeDevices",
    ),
)
register_upstream_fields(ContainerPort, ("hostPort", "hostIP"))
register_upstream_fields(VolumeMount, ("mountPropagation", "subPathExpr", "recursiveReadOnly"))
register_upstream_fields(ResourceRequirements, ("claims",))
register_upstream_fields(
    PodSpec,
    (
        "activeDeadlineSeconds",
        "automountServiceAccountToken",
        "dnsConfig",
        "dnsPolicy",
        "enableServiceLinks",
        "ephemeralContainers",
        "hostAliases",
        "hostIPC",
        "hostNetwork",
        "hostPID",
        "hostUsers",
        "hostnameOverride",
        "imagePullSecrets",
        "nodeName",
        "os",
        "preemptionPolicy",
        "priority",
        "readinessGates",
        "resourceClaims",
        "resources",
        "runtimeClassName",
        "schedulerName",
        "securityContext",
        "serviceAccount",
        "setHostnameAsFQDN",
        "shareProcessNamespace",
        "terminationGracePeriodSeconds",
        "topologySpreadConstraints",
    ),
)
register_upstream_fields(NodeSpec, ("podCIDRs", "configSource", "externalID"))
register_upstream_fields(
    NodeStatus,
    (
        "addresses",
        "daemonEndpoints",
        "nodeInfo",
        "images",
        "volumesInUse",
        "volumesAttached",
        "phase",
        "config",
        "runtimeHandlers",
        "features",
    ),
)
