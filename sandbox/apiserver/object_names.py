"""Names, label keys and label values as apimachinery validates them, with its exact messages.

``metadata.name`` of most kinds is an RFC 1123 subdomain (a Namespace's an RFC 1123 label), a
label key a qualified name (``[prefix/]name``), a label value empty or a short qualified name.
The messages are the real server's (``util/validation``), so a refusal reads as kube-apiserver's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .field_errors import FieldError, invalid

DNS1123_LABEL_FORMAT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FORMAT = DNS1123_LABEL_FORMAT + "(\\." + DNS1123_LABEL_FORMAT + ")*"
QUALIFIED_NAME_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FORMAT = "(" + QUALIFIED_NAME_FORMAT + ")?"

_LABEL = re.compile(f"^{DNS1123_LABEL_FORMAT}$")
_SUBDOMAIN = re.compile(f"^{DNS1123_SUBDOMAIN_FORMAT}$")
_QUALIFIED = re.compile(f"^{QUALIFIED_NAME_FORMAT}$")
_LABEL_VALUE = re.compile(f"^{LABEL_VALUE_FORMAT}$")


def regex_error(message: str, pattern: str, *examples: str) -> str:
    """validation.RegexError, spacing and all."""
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    listed = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {listed}regex used for validation is '{pattern}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def dns1123_label(value: str) -> list[str]:
    problems = [max_len_error(63)] if len(value) > 63 else []
    if not _LABEL.match(value):
        problems.append(
            regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                "start and end with an alphanumeric character",
                DNS1123_LABEL_FORMAT,
                "my-name",
                "123-abc",
            )
        )
    return problems


def dns1123_subdomain(value: str) -> list[str]:
    problems = [max_len_error(253)] if len(value) > 253 else []
    if not _SUBDOMAIN.match(value):
        problems.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
                DNS1123_SUBDOMAIN_FORMAT,
                "example.com",
            )
        )
    return problems


_QUALIFIED_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)


def qualified_name(value: str, what: str = "a qualified name") -> list[str]:
    """validation.IsQualifiedName (``what``: "a valid label key" for a label key, as IsLabelKey says)."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"{what} "
            + regex_error(_QUALIFIED_MESSAGE, QUALIFIED_NAME_FORMAT, *_QUALIFIED_EXAMPLES)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + p for p in dns1123_subdomain(prefix))
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part " + max_len_error(63))
    if not _QUALIFIED.match(name):
        problems.append("name part " + regex_error(_QUALIFIED_MESSAGE, QUALIFIED_NAME_FORMAT, *_QUALIFIED_EXAMPLES))
    return problems


_QUALIFIED_EXAMPLES = ("MyName", "my.name", "123-abc")
LABEL_KEY = "a valid label key"


def label_value(value: str) -> list[str]:
    problems = [max_len_error(63)] if len(value) > 63 else []
    if not _LABEL_VALUE.match(value):
        problems.append(
            regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                LABEL_VALUE_FORMAT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return problems


def labels_errors(labels: Mapping[str, Any], field: str) -> list[FieldError]:
    """ValidateLabels: each bad key, then each bad value, at the labels' path."""
    errors: list[FieldError] = []
    for key, value in sorted(labels.items()):
        errors.extend(invalid(field, key, problem) for problem in qualified_name(str(key), LABEL_KEY))
        errors.extend(invalid(field, value, problem) for problem in label_value(str(value)))
    return errors


def name_errors(name: str, *, label: bool = False) -> list[FieldError]:
    """``metadata.name`` checked as a subdomain (most kinds) or a label (Namespaces)."""
    problems = dns1123_label(name) if label else dns1123_subdomain(name)
    return [invalid("metadata.name", name, problem) for problem in problems]
