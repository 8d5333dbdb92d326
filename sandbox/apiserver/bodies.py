"""Request bodies in the media types the real server reads: JSON, YAML, and protobuf for built-in kinds."""

from __future__ import annotations

from typing import Any

import yaml

from runtimes.k8s import wire

from .errors import ApiError
from .patches import APPLY
from .protobuf import PROTOBUF, decode_object

YAML_TYPES = (APPLY, "application/yaml")


def media_type(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def decode_body(raw: bytes, content_type: str) -> Any:
    """The body as JSON values; ``ApiError`` 400 (or 415 for protobuf of a kind not read here)."""
    media = media_type(content_type)
    if media == PROTOBUF:
        return decode_object(raw)
    try:
        return wire.loads(raw)
    except ValueError as error:
        if media not in YAML_TYPES:
            raise ApiError.bad_request(f"the request body is not JSON: {error}") from None
    try:
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        raise ApiError.bad_request(f"the request body is not YAML: {error}") from None
