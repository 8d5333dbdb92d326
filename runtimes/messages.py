"""How every entry point words a refusal: the webhook's words, one copy for all layers.

``TrainJob "ns/job" is invalid: spec.trainer.numNodes: must be at least 1`` is what the
webhook answers, what ``trainyard render``/``admit``/``run`` print after ``file:line:``, and what
``python -m runtimes.local`` and the SDK's local backend print. The functions live in the bottom
layer so that ``runtimes`` (its loaders, the local runner) and ``scheduler.api.checks`` (the
one validation path of every kind) share them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from pydantic import ValidationError

from runtimes.errors import FieldError
from runtimes.k8s.fields import FieldPath

# Kubernetes truncates long status messages; keep the first errors, say how many were left out.
MAX_LISTED_ERRORS = 8
_PATH_PART = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


class HasPathAndMessage(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def message(self) -> str: ...


def describe_errors(subject: str, errors: Sequence[HasPathAndMessage]) -> str:
    """``TrainJob "ns/x" is invalid: spec.a: why; spec.b: why`` (capped, with a count)."""
    listed = "; ".join(f"{error.path}: {error.message}" for error in errors[:MAX_LISTED_ERRORS])
    more = len(errors) - MAX_LISTED_ERRORS
    suffix = f"; and {more} more" if more > 0 else ""
    return f"{subject} is invalid: {listed}{suffix}"


def subject_of(kind: str, name: str | None, namespace: str | None) -> str:
    """How an object is named in a message: ``ClusterQueue "team-a"``, ``TrainJob "ns/job"``."""
    shown = name or "<generated name>"
    return f'{kind} "{namespace}/{shown}"' if namespace else f'{kind} "{shown}"'


def parse_field_path(path: str) -> FieldPath:
    """``spec.podSets[0].count`` or ``metadata.labels[a/b]`` as a path tuple (to find its line)."""
    parts: list[str | int] = []
    for name, key in _PATH_PART.findall(path):
        if name:
            parts.append(name)
        else:
            parts.append(int(key) if key.isdigit() else key)
    return tuple(parts)


def errors_from_pydantic(error: ValidationError, prefix: str = "") -> list[FieldError]:
    """A pydantic failure to parse an object, as field errors a person can act on:
    ``spec.trainer.numNodes: Input should be a valid integer (got 'two')``."""
    found: list[FieldError] = []
    for item in error.errors(include_url=False):
        path = prefix
        for part in item["loc"]:
            if isinstance(part, str) and part.startswith("function-"):
                continue  # a validator's name, not a field
            path = f"{path}[{part}]" if isinstance(part, int) else (f"{path}.{part}" if path else str(part))
        value = item.get("input")
        shown = repr(value) if not isinstance(value, dict | list) else type(value).__name__
        found.append(FieldError(path or "<object>", f"{item['msg'].removeprefix('Value error, ')} (got {shown})"))
    return found


def version_not_understood(api_version: str, kind: str, understood: Sequence[str]) -> FieldError:
    """A known kind under a version trainyard does not read (``trainer.kubeflow.org/v1``)."""
    return FieldError(
        "apiVersion",
        f"{api_version!r} is not a version trainyard understands for {kind}; use {' or '.join(understood)}",
    )
