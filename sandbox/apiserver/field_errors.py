"""Field errors as apimachinery's ``field.Error`` writes them, and the 422 ``Invalid`` they make.

A validation failure names a field path (``spec.podSets[0].count``), an error type and a detail;
its text (``spec.x: Unsupported value: "y": supported values: "a", "b"``) and its cause
(``{reason: FieldValueNotSupported, message, field}``) are the real server's, so a client that
reads ``details.causes`` or prints the message sees what kube-apiserver would say. Values print
as Go's ``field.Error`` prints them: strings quoted, numbers and booleans bare, null as ``null``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ApiError, status_details

# error type -> (cause reason, what the message starts with)
TYPES = {
    "Required": ("FieldValueRequired", "Required value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
}
NO_VALUE: Any = object()  # the error names no value (Required, Forbidden, TooLong)
# Errors that stop CEL rules from being evaluated (apiextensions' hasBlockingErr).
BLOCKING = frozenset({"NotSupported", "Required", "TooLong", "TooMany", "TypeInvalid"})


def go_value(value: Any) -> str:
    """A value as ``field.Error`` prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) and not value.is_integer() else str(int(value))
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class FieldError:
    type: str  # a key of TYPES
    field: str  # "spec.x[0].y"; "" for an error about the whole object
    value: Any = NO_VALUE
    detail: str = ""

    @property
    def body(self) -> str:
        """The message without the field: what a cause's ``message`` holds."""
        text = TYPES[self.type][1]
        if self.value is not NO_VALUE:
            text += f": {go_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field or '<nil>'}: {self.body}"

    def cause(self) -> dict[str, str]:
        return {"reason": TYPES[self.type][0], "message": self.body, "field": self.field or "<nil>"}


def required(field: str, detail: str = "") -> FieldError:
    return FieldError("Required", field, detail=detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError("Invalid", field, value, detail)


def not_supported(field: str, value: Any, supported: Sequence[Any]) -> FieldError:
    return FieldError("NotSupported", field, value, "supported values: " + ", ".join(go_value(v) for v in supported))


def too_long(field: str, limit: int) -> FieldError:
    return FieldError("TooLong", field, detail=f"may not be more than {limit} bytes")


def too_many(field: str, count: int, limit: int) -> FieldError:
    return FieldError("TooMany", field, count, f"must have at most {limit} items")


def aggregate(errors: Sequence[object]) -> str:
    """utilerrors' aggregate: one error as itself, several as ``[a, b]``."""
    texts = [str(e) for e in errors]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def invalid_object(qualified_kind: str, name: str, errors: Sequence[FieldError], *, group: str, kind: str) -> ApiError:
    """apierrors.NewInvalid: 422 naming the object (``Kind.group "name" is invalid: ...``).

    ``qualified_kind`` is what the message names (a custom resource's kind, ``ClusterQueue.kueue.x-k8s.io``,
    or its resource, ``workloads.kueue.x-k8s.io``, as the code path that refuses it does).
    """
    details = status_details(name, group, kind, causes=[e.cause() for e in errors])
    return ApiError(
        422, f'{qualified_kind} "{name}" is invalid: {aggregate(errors)}', reason="Invalid", details=details
    )
