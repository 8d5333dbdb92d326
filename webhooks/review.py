"""AdmissionReview admission.k8s.io/v1: parsing a request and building the response.

A review that cannot be read gets a ``BadReview``: with a uid the server answers with a denying
AdmissionReview (the API server shows its message to the user), without one with HTTP 400.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from runtimes.k8s import wire

ADMISSION_API_VERSION = "admission.k8s.io/v1"
ADMISSION_KIND = "AdmissionReview"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


class BadReview(Exception):
    """A request body that is not a usable AdmissionReview; ``uid`` when one could be read."""

    def __init__(self, message: str, uid: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.uid = uid


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of ``request`` the handlers read; ``object``/``old_object`` stay plain dicts."""

    uid: str
    group: str
    version: str
    kind: str
    operation: str
    namespace: str | None
    name: str | None
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool
    user: str | None = None


@dataclass
class Verdict:
    """What a handler decided. ``patch_to`` is the mutated object (the patch is a diff against it)."""

    allowed: bool
    message: str | None = None
    code: int = 200
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    patch: list[dict[str, Any]] | None = None

    @classmethod
    def allow(cls, warnings: list[str] | None = None) -> Verdict:
        return cls(True, warnings=list(warnings or []))

    @classmethod
    def deny(
        cls, message: str, *, code: int = 403, reason: str = "Forbidden", warnings: list[str] | None = None
    ) -> Verdict:
        return cls(False, message=message or "denied", code=code, reason=reason, warnings=list(warnings or []))

    @classmethod
    def invalid(cls, message: str, warnings: list[str] | None = None) -> Verdict:
        return cls.deny(message, code=422, reason="Invalid", warnings=warnings)

    @classmethod
    def mutate(cls, original: dict[str, Any], mutated: dict[str, Any], warnings: list[str] | None = None) -> Verdict:
        """Allow with the RFC 6902 patch that turns ``original`` into ``mutated`` (empty: no patch)."""
        operations: list[dict[str, Any]] = []
        _diff(original, mutated, "", operations)
        return cls(True, warnings=list(warnings or []), patch=operations or None)


def _diff(before: Any, after: Any, path: str, operations: list[dict[str, Any]]) -> None:
    """Append to ``operations`` the JSON patch that turns ``before`` into ``after``.

    A mutating webhook copies only the dicts on the paths it changes, so whatever it left alone is
    the very same object in both and is skipped without a comparison. Dicts are diffed key by key;
    any other value that differs (a list included) is replaced whole, which keeps the patch free of
    list indices that shift under one another.
    """
    if before is after:
        return
    if type(before) is dict and type(after) is dict:
        for key, old in before.items():
            where = f"{path}/{_pointer_token(key)}"
            if key in after:
                _diff(old, after[key], where, operations)
            else:
                operations.append({"op": "remove", "path": where})
        for key, new in after.items():
            if key not in before:
                operations.append({"op": "add", "path": f"{path}/{_pointer_token(key)}", "value": new})
    elif type(before) is not type(after) or before != after:
        operations.append({"op": "replace", "path": path, "value": after})


def _pointer_token(key: str) -> str:
    """A key as one JSON pointer token (RFC 6901: ``~`` is ``~0``, ``/`` is ``~1``)."""
    return key.replace("~", "~0").replace("/", "~1") if "~" in key or "/" in key else key


def _text(value: Any, path: str, uid: str | None, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise BadReview(f"{path} must be a non-empty string, got {value!r}", uid)
    return value


def _object(value: Any, path: str, uid: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadReview(f"{path} must be an object, got {type(value).__name__}", uid)
    return value


def parse_review(body: bytes) -> AdmissionRequest:
    """Parse an AdmissionReview v1 request body; raises ``BadReview`` naming what is wrong."""
    try:
        document = wire.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadReview(f"request body is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise BadReview(f"request body must be a JSON object (an AdmissionReview), got {type(document).__name__}")
    request = document.get("request")
    uid = request.get("uid") if isinstance(request, dict) else None
    uid = uid if isinstance(uid, str) and uid else None
    if document.get("apiVersion") != ADMISSION_API_VERSION or document.get("kind") != ADMISSION_KIND:
        raise BadReview(
            f"expected apiVersion {ADMISSION_API_VERSION} kind {ADMISSION_KIND}, "
            f"got apiVersion {document.get('apiVersion')!r} kind {document.get('kind')!r}",
            uid,
        )
    if not isinstance(request, dict):
        raise BadReview("AdmissionReview.request is missing")
    if uid is None:
        raise BadReview("AdmissionReview.request.uid is missing")
    kind = request.get("kind")
    if not isinstance(kind, dict):
        raise BadReview("request.kind must be an object {group, version, kind}", uid)
    operation = _text(request.get("operation"), "request.operation", uid)
    if operation not in OPERATIONS:
        raise BadReview(f"request.operation must be one of {', '.join(OPERATIONS)}, got {operation!r}", uid)
    dry_run = request.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise BadReview(f"request.dryRun must be a boolean, got {dry_run!r}", uid)
    user_info = request.get("userInfo")
    user = user_info.get("username") if isinstance(user_info, dict) else None
    return AdmissionRequest(
        uid=uid,
        group=_text(kind.get("group", ""), "request.kind.group", uid, required=False) or "",
        version=_text(kind.get("version"), "request.kind.version", uid) or "",
        kind=_text(kind.get("kind"), "request.kind.kind", uid) or "",
        operation=operation,
        namespace=_text(request.get("namespace"), "request.namespace", uid, required=False),
        name=_text(request.get("name"), "request.name", uid, required=False),
        object=_object(request.get("object"), "request.object", uid),
        old_object=_object(request.get("oldObject"), "request.oldObject", uid),
        dry_run=dry_run,
        user=user if isinstance(user, str) else None,
    )


def build_response(uid: str, verdict: Verdict) -> dict[str, Any]:
    """The AdmissionReview v1 response document for ``verdict``, echoing ``uid``."""
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        status: dict[str, Any] = {"code": verdict.code, "message": verdict.message or "denied"}
        if verdict.reason:
            status["reason"] = verdict.reason
        response["status"] = status
    if verdict.warnings:
        response["warnings"] = verdict.warnings
    if verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(wire.dumps(verdict.patch)).decode("ascii")
    return {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_KIND, "response": response}


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSONPatch operations of a response document (empty when there is no patch)."""
    encoded = response.get("patch")
    if not encoded:
        return []
    operations: list[dict[str, Any]] = json.loads(base64.b64decode(encoded))
    return operations


# Far deeper than any field of the kinds reviewed here (a runtime patch's pod affinity is ~25).
MAX_OBJECT_DEPTH = 100


def too_deep(document: Any, limit: int = MAX_OBJECT_DEPTH) -> str | None:
    """The path of the first value nested more than ``limit`` maps and lists deep, or None.

    Asked only after a handler failed (walking every review would cost more than most reviews):
    such an object is a client's mistake, and the refusal names where it is.
    """
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in children:
            if isinstance(child, dict | list):
                where = f"{path}[{key}]" if isinstance(node, list) else f"{path}.{key}" if path else str(key)
                if depth + 1 >= limit:
                    return where
                stack.append((child, where, depth + 1))
    return None
