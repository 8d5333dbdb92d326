"""Field selectors as the API server parses them from a list or watch query (label selectors are
``label_selectors``').

A field selector is ``field=value``, ``field==value`` or ``field!=value`` terms joined by
commas, with ``\\``, ``,`` and ``=`` escaped by a backslash in values (apimachinery's
``fields.ParseSelector``). Each kind answers a field it does not index in its own words, as its
registry's conversion function does: ``field label not supported: X`` (Pods, Nodes, custom
resources...), ``"X" is not a known field selector: only "metadata.name", "metadata.namespace"``
(ConfigMaps, Leases...), ``field label "X" not supported for Job``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import ApiError
from .kinds import ResourceType
from .label_selectors import parse_label_selector

Predicate = Callable[[Mapping[str, Any]], bool]

# kinds whose registry converts field labels with runtime.DefaultMetaV1FieldSelectorConversion
DEFAULT_CONVERSION = {
    ("", "ConfigMap"),
    ("", "ServiceAccount"),
    ("coordination.k8s.io", "Lease"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
}
# field labels that are not the object's path to the field (an Event's "source" is its source.component)
FIELD_PATHS = {"source": "source.component"}
OPERATORS = ("!=", "==", "=")


def _unsupported(rtype: ResourceType, label: str) -> ApiError:
    if (rtype.group, rtype.kind) in DEFAULT_CONVERSION:
        return ApiError.bad_request(
            f'"{label}" is not a known field selector: only "metadata.name", "metadata.namespace"'
        )
    if (rtype.group, rtype.kind) == ("batch", "Job"):
        return ApiError.bad_request(f'field label "{label}" not supported for Job')
    return ApiError.bad_request(f"field label not supported: {label}")


def _split_terms(text: str) -> list[str]:
    """Split on commas a backslash does not escape."""
    terms, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            current += char
            escaped = True
        elif char == ",":
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for index in range(len(term)):
        for operator in OPERATORS:
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator) :]
    return None


def _unescape(value: str) -> str:
    result, escaped = "", False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise ApiError.bad_request(f"invalid field selector: invalid escape sequence: \\{char}")
            result += char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise ApiError.bad_request(f"invalid field selector: unescaped character in value: {ord(char)}")
        else:
            result += char
    if escaped:
        raise ApiError.bad_request("invalid field selector: invalid escape sequence: \\")
    return result


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in FIELD_PATHS.get(path, path).split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(text: str | None, rtype: ResourceType) -> Predicate:
    """A predicate over a whole object; ``ApiError`` 400 for bad syntax or a field the kind does not index."""
    checks: list[tuple[str, bool, str]] = []  # (field label, equal?, value)
    for term in sorted(_split_terms(text or "")):
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise ApiError.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        label, operator, value = split
        checks.append((label, operator != "!=", _unescape(value)))
    allowed = ("metadata.name", "metadata.namespace", *rtype.field_selectors)
    for label, _, _ in checks:
        if label not in allowed:
            raise _unsupported(rtype, label)
    return lambda obj: all((_field_value(obj, label) == value) == equal for label, equal, value in checks)


__all__ = ["parse_field_selector", "parse_label_selector"]
