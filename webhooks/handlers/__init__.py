"""Admission handlers: pure functions of an ``AdmissionRequest`` and the ``ObjectCache``.

A handler returns a ``Verdict`` and never changes anything, so dryRun requests need no
special path. Every rule it applies is asked of the package that owns it (``runtimes`` for
Trainer's rules, ``scheduler.api`` for Kueue's, the engine for "can ever fit").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict

Handler = Callable[[AdmissionRequest, ObjectCache], Verdict]

# Kubernetes truncates long status messages; keep the first errors, say how many were left out.
MAX_LISTED_ERRORS = 8


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
    shown = name or "<generated name>"
    return f'{kind} "{namespace}/{shown}"' if namespace else f'{kind} "{shown}"'
