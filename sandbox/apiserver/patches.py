"""The patch types the API server accepts, applied to a stored object.

JSON merge patch (RFC 7386) and JSON patch (RFC 6902, through the jsonpatch library). A
strategic merge patch is applied as a merge patch on the built-in kinds served here (none of
their lists that this project touches need merge keys) and refused with 415 on custom
resources, as the real server refuses it there. Server-side apply is ``server_side_apply``'s.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

from .errors import ApiError
from .kinds import ResourceType
from .records import clone

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
REJECTED = "the server rejected our request due to an error in our request"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, ``null`` removes, anything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def apply_patch(rtype: ResourceType, content_type: str, current: dict[str, Any], patch: Any) -> dict[str, Any]:
    """The object after the patch; ``ApiError`` 415 for an unsupported type, 422 for a bad patch."""
    media = content_type.split(";")[0].strip().lower()
    if media == STRATEGIC and rtype.custom:
        raise ApiError(
            415,
            f"the body of the request was in an unknown format - accepted media types include: {JSON_PATCH}, {MERGE}",
        )
    if media in (MERGE, STRATEGIC):
        if not isinstance(patch, dict):
            raise ApiError(422, "a merge patch must be a JSON object")
        patched = merge_patch(current, patch)
    elif media == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError(422, "a JSON patch must be a JSON array of operations")
        try:
            patched = jsonpatch.apply_patch(current, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
            # the real server keeps the reason to itself (NewGenericServerResponse's generic 422)
            raise ApiError(422, REJECTED, details={}) from None
    else:
        raise ApiError(
            415,
            f"the body of the request was in an unknown format ({media}) - accepted media types include: "
            f"{JSON_PATCH}, {MERGE}" + ("" if rtype.custom else f", {STRATEGIC}"),
        )
    if not isinstance(patched, dict):
        raise ApiError(422, "the patched object is not a JSON object")
    return patched
