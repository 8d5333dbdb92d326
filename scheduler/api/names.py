"""Kubernetes naming rules (apimachinery's validation): DNS-1123 names, qualified names, label values.

Each function returns why a value is invalid, in words a person can act on, or None.
"""

from __future__ import annotations

import re

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def dns_subdomain_error(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain (object names, queue names), or None."""
    if not value:
        return "must not be empty"
    if len(value) > 253:
        return f"must be no more than 253 characters, got {len(value)}"
    if not _DNS_SUBDOMAIN.match(value):
        return (
            f"{value!r} must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit (for example 'team-a')"
        )
    return None


def qualified_name_error(value: str) -> str | None:
    """Why ``value`` is not a label key / resource name (``[prefix/]name``), or None."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or dns_subdomain_error(prefix) is not None):
        return f"{value!r}: the prefix before '/' must be a DNS-1123 subdomain such as 'example.com'"
    if not name:
        return f"{value!r}: the name part must not be empty"
    if len(name) > 63:
        return f"{value!r}: the name part must be no more than 63 characters"
    if not _QUALIFIED_NAME_PART.match(name):
        return (
            f"{value!r}: the name part must consist of alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric (for example 'nvidia.com/gpu')"
        )
    return None


def label_value_error(value: str) -> str | None:
    if len(value) > 63:
        return f"{value!r} must be no more than 63 characters"
    if not _LABEL_VALUE.match(value):
        return f"{value!r} must be empty or alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return None
