"""Errors of the Kubernetes adapter, with the API server's own Status message kept."""

from __future__ import annotations

import json
from typing import Any

# Answers worth retrying as they are: throttling and server-side trouble.
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


class KubeError(Exception):
    """Anything the adapter could not do against the API server."""


class KubeConfigError(KubeError):
    """No usable kubeconfig or in-cluster configuration; the message says what to pass."""


class KubeApiError(KubeError):
    """A non-2xx answer: ``status`` (HTTP code), ``reason`` and ``message`` from the Status body."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        return self.status in TRANSIENT_STATUSES

    @classmethod
    def from_status(cls, document: Any, status: int | None = None, retry_after: str | None = None) -> KubeApiError:
        """From a ``Status`` object (a body, or the object of a watch ERROR event)."""
        body = document if isinstance(document, dict) else {}
        code = body.get("code", status)
        delay: float | None = None
        if retry_after:
            try:
                delay = float(retry_after)
            except ValueError:
                delay = None
        return cls(
            int(code) if isinstance(code, int | str) and str(code).isdigit() else int(status or 0),
            str(body.get("reason") or "Unknown"),
            str(body.get("message") or (document if isinstance(document, str) else "no message")),
            delay,
        )

    @classmethod
    def from_body(cls, status: int, body: bytes | str | None, retry_after: str | None = None) -> KubeApiError:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
        try:
            document: Any = json.loads(text)
        except ValueError:
            document = text
        return cls.from_status(document, status, retry_after)


class WatchExpired(KubeApiError):
    """410 Gone: the revision a watch resumed from is no longer kept; list again."""
