"""Kubernetes protobuf request bodies, decoded to the JSON the rest of the server speaks.

kubectl's typed clients (``kubectl create namespace|configmap|secret|serviceaccount``,
``kubectl auth can-i``) send built-in kinds as ``application/vnd.kubernetes.protobuf`` and do not
fall back to JSON when refused (client-go falls back only from CBOR), so a server that serves
built-in kinds has to read it. The envelope is ``k8s\\0`` then a ``runtime.Unknown`` message
(typeMeta, raw, contentEncoding, contentType); ``raw`` is the object in the field numbers of
k8s.io/api's ``generated.proto``. The kinds decoded here are those kubectl creates from typed
clients on the kinds this server stores; any other gets 415 with a Status saying to send JSON.

Field specs: ``s`` string, ``b`` bytes (base64 in JSON), ``i`` int64, ``t`` Time, ``?`` bool,
``M:Name`` message, ``m:s``/``m:b`` map to strings/bytes, ``*`` in front for a repeated field;
``!`` after a spec keeps a zero value (a Go pointer field: present means set), since gogo-proto
writes every non-pointer field, empty or not, where JSON would omit it.
"""

from __future__ import annotations

import base64
import datetime
from typing import Any

from .errors import ApiError

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

MESSAGES: dict[str, dict[int, tuple[str, str]]] = {
    "Unknown": {1: ("typeMeta", "M:TypeMeta"), 2: ("raw", "raw"), 3: ("contentEncoding", "s"), 4: ("contentType", "s")},
    "TypeMeta": {1: ("apiVersion", "s"), 2: ("kind", "s")},
    "Time": {1: ("seconds", "i"), 2: ("nanos", "i")},
    "ObjectMeta": {
        1: ("name", "s"),
        2: ("generateName", "s"),
        3: ("namespace", "s"),
        5: ("uid", "s"),
        6: ("resourceVersion", "s"),
        7: ("generation", "i"),
        8: ("creationTimestamp", "t"),
        9: ("deletionTimestamp", "t"),
        10: ("deletionGracePeriodSeconds", "i!"),
        11: ("labels", "m:s"),
        12: ("annotations", "m:s"),
        13: ("ownerReferences", "*M:OwnerReference"),
        14: ("finalizers", "*s"),
    },
    "OwnerReference": {
        1: ("kind", "s"),
        3: ("name", "s"),
        4: ("uid", "s"),
        5: ("apiVersion", "s"),
        6: ("controller", "?!"),
        7: ("blockOwnerDeletion", "?!"),
    },
    "ObjectReference": {
        1: ("kind", "s"),
        2: ("namespace", "s"),
        3: ("name", "s"),
        4: ("uid", "s"),
        5: ("apiVersion", "s"),
        6: ("resourceVersion", "s"),
        7: ("fieldPath", "s"),
    },
    "LocalObjectReference": {1: ("name", "s")},
    "Namespace": {1: ("metadata", "M:ObjectMeta"), 2: ("spec", "M:NamespaceSpec"), 3: ("status", "M:NamespaceStatus")},
    "NamespaceSpec": {1: ("finalizers", "*s")},
    "NamespaceStatus": {1: ("phase", "s")},
    "ConfigMap": {
        1: ("metadata", "M:ObjectMeta"),
        2: ("data", "m:s"),
        3: ("binaryData", "m:b"),
        4: ("immutable", "?!"),
    },
    "Secret": {
        1: ("metadata", "M:ObjectMeta"),
        2: ("data", "m:b"),
        3: ("type", "s"),
        4: ("stringData", "m:s"),
        5: ("immutable", "?!"),
    },
    "ServiceAccount": {
        1: ("metadata", "M:ObjectMeta"),
        2: ("secrets", "*M:ObjectReference"),
        3: ("imagePullSecrets", "*M:LocalObjectReference"),
        4: ("automountServiceAccountToken", "?!"),
    },
    "SelfSubjectAccessReview": {1: ("metadata", "M:ObjectMeta"), 2: ("spec", "M:SelfSubjectAccessReviewSpec")},
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "M:ResourceAttributes!"),
        2: ("nonResourceAttributes", "M:NonResourceAttributes!"),
    },
    "ResourceAttributes": {
        1: ("namespace", "s"),
        2: ("verb", "s"),
        3: ("group", "s"),
        4: ("version", "s"),
        5: ("resource", "s"),
        6: ("subresource", "s"),
        7: ("name", "s"),
    },
    "NonResourceAttributes": {1: ("path", "s"), 2: ("verb", "s")},
    "SelfSubjectRulesReview": {1: ("metadata", "M:ObjectMeta"), 2: ("spec", "M:SelfSubjectRulesReviewSpec")},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "s")},
    "SelfSubjectReview": {1: ("metadata", "M:ObjectMeta")},
}
KINDS = {
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
}


class _Malformed(ValueError):
    pass


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Malformed("a varint runs past the end of the message")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of one message: varints as int, length-delimited as bytes."""
    found: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, at = _varint(data, at)
            found.append((number, value))
        elif wire_type == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise _Malformed("a field runs past the end of the message")
            found.append((number, data[at : at + size]))
            at += size
        elif wire_type in (1, 5):  # fixed64 / fixed32: no field of the kinds read here
            at += 8 if wire_type == 1 else 4
        else:
            raise _Malformed(f"wire type {wire_type} is not used by Kubernetes objects")
    return found


def _time(data: bytes) -> str | None:
    fields = dict(_fields(data))
    seconds = fields.get(1, 0)
    if not isinstance(seconds, int) or not seconds:
        return None
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _scalar(spec: str, value: int | bytes) -> Any:
    if spec == "s":
        return bytes(value).decode() if isinstance(value, bytes) else ""
    if spec == "b":
        return base64.b64encode(bytes(value)).decode() if isinstance(value, bytes) else ""
    if spec == "i":
        number = int(value) if isinstance(value, int) else 0
        return number - (1 << 64) if number >= 1 << 63 else number
    if spec == "?":
        return bool(value)
    raise _Malformed(f"unknown field spec {spec!r}")


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False, None) or value == {} or value == []


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    """One message of ``MESSAGES`` as a JSON object (unknown field numbers are skipped)."""
    schema = MESSAGES[name]
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        key, spec = schema[number]
        keep_zero = spec.endswith("!")
        spec = spec.rstrip("!")
        repeated = spec.startswith("*")
        spec = spec.lstrip("*")
        if spec.startswith("m:"):
            entry = dict(_fields(bytes(value) if isinstance(value, bytes) else b""))
            obj.setdefault(key, {})[_scalar("s", entry.get(1, b""))] = _scalar(spec[2:], entry.get(2, b""))
            continue
        if spec.startswith("M:"):
            decoded: Any = decode_message(spec[2:], bytes(value) if isinstance(value, bytes) else b"")
        elif spec == "t":
            decoded = _time(bytes(value) if isinstance(value, bytes) else b"")
        else:
            decoded = _scalar(spec, value)
        if repeated:
            obj.setdefault(key, []).append(decoded)
        elif keep_zero or not _is_zero(decoded):
            obj[key] = decoded
    return obj


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON object a protobuf request body holds; ``ApiError`` 400 or 415 when it cannot be read."""
    if not body.startswith(MAGIC):
        raise ApiError.bad_request("the protobuf body does not start with the Kubernetes envelope (k8s\\x00)")
    try:
        envelope = dict(_fields(body[len(MAGIC) :]))
        type_meta = decode_message("TypeMeta", bytes(envelope.get(1, b"")))
        api_version, kind = str(type_meta.get("apiVersion", "")), str(type_meta.get("kind", ""))
        if (api_version, kind) not in KINDS:
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - this sandbox API server reads protobuf only "
                f"for {', '.join(sorted(k for _, k in KINDS))}, not {api_version} {kind}; "
                "accepted media types include: application/json, application/yaml",
            )
        obj = decode_message(kind, bytes(envelope.get(2, b"")))
    except _Malformed as error:
        raise ApiError.bad_request(f"the protobuf body cannot be read: {error}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}
