"""API errors as the real server writes them: a ``Status`` object with code, reason and message."""

from __future__ import annotations

from typing import Any

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_details(name: str, group: str, kind: str, **more: Any) -> dict[str, Any]:
    """A Status's ``details``: an empty name or group (the core group) is left out, as Go's
    ``omitempty`` leaves it."""
    details: dict[str, Any] = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    details.update(more)
    return details


def success(name: str, group: str, plural: str, uid: str) -> dict[str, Any]:
    """What a delete answers once the object is gone (the registry's finalizeDelete)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": status_details(name, group, plural, uid=uid),
    }


class ApiError(Exception):
    """An error answer; ``status()`` is the body the client receives."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,  # a list's continue token, on an expired one
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details
        self.metadata = metadata or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.metadata),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, message)

    @classmethod
    def not_found(cls, plural: str, name: str, kind_group: str = "") -> ApiError:
        details = status_details(name, kind_group, plural)
        qualified = f"{plural}.{kind_group}" if kind_group else plural
        return cls(404, f'{qualified} "{name}" not found', details=details)

    @classmethod
    def already_exists(cls, plural: str, name: str, kind_group: str = "") -> ApiError:
        qualified = f"{plural}.{kind_group}" if kind_group else plural
        details = status_details(name, kind_group, plural)
        return cls(409, f'{qualified} "{name}" already exists', reason="AlreadyExists", details=details)

    @classmethod
    def conflict(cls, plural: str, name: str, kind_group: str = "") -> ApiError:
        qualified = f"{plural}.{kind_group}" if kind_group else plural
        details = status_details(name, kind_group, plural)
        return cls(
            409,
            f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again",
            reason="Conflict",
            details=details,
        )

    @classmethod
    def expired(cls, requested: int, oldest: int) -> ApiError:
        return cls(410, f"too old resource version: {requested} ({oldest})", reason="Expired")
