"""What the real API server fills in or rewrites on a write, for the kinds where controllers rely on it.

- Secret: ``stringData`` is merged into ``data`` (base64) and dropped; ``type`` defaults to Opaque.
- batch/v1 Job: parallelism, completions, backoffLimit, completionMode and suspend get their
  defaults, and (unless ``manualSelector``) the server generates the selector on the Job's uid
  and labels the pod template with it (``batch.kubernetes.io/controller-uid``,
  ``batch.kubernetes.io/job-name`` and the legacy ``controller-uid``/``job-name``), as the Job
  registry strategy does; the Job's own labels default to its template's.
- Namespace: ``spec.finalizers`` is ``[kubernetes]`` (the namespace controller's).
- Pod: scheduling gates can only be removed after creation, and a pod cannot be created with
  both a ``nodeName`` and gates (422, with the real server's messages).
"""

from __future__ import annotations

import base64
from typing import Any

from .errors import ApiError
from .kinds import ResourceType

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
DEFAULT_BACKOFF_LIMIT = 6


def _is(rtype: ResourceType, group: str, kind: str) -> bool:
    return rtype.group == group and rtype.kind == kind


def _merge_string_data(secret: dict[str, Any]) -> None:
    string_data = secret.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = secret.setdefault("data", {}) or {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        secret["data"] = data
    secret.setdefault("type", "Opaque")


def _default_job(job: dict[str, Any]) -> None:
    spec = job.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else DEFAULT_BACKOFF_LIMIT
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    metadata = job["metadata"]
    template = spec.setdefault("template", {})
    template_metadata = template.setdefault("metadata", {}) or {}
    template["metadata"] = template_metadata
    if not spec.get("manualSelector"):
        uid, name = str(metadata["uid"]), str(metadata["name"])
        spec["selector"] = {"matchLabels": {CONTROLLER_UID_LABEL: uid}}
        labels = template_metadata.setdefault("labels", {}) or {}
        labels.update(
            {
                CONTROLLER_UID_LABEL: uid,
                JOB_NAME_LABEL: name,
                LEGACY_CONTROLLER_UID_LABEL: uid,
                LEGACY_JOB_NAME_LABEL: name,
            }
        )
        template_metadata["labels"] = labels
    if not metadata.get("labels") and template_metadata.get("labels"):
        metadata["labels"] = dict(template_metadata["labels"])


def _gates(pod: dict[str, Any]) -> list[str]:
    return [str(g.get("name")) for g in (pod.get("spec") or {}).get("schedulingGates") or [] if isinstance(g, dict)]


def _invalid_pod(pod: dict[str, Any], field: str, why: str) -> ApiError:
    name = pod["metadata"].get("name")
    return ApiError(422, f'Pod "{name}" is invalid: {field}: Forbidden: {why}', reason="Invalid")


def prepare_for_create(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Fill in what the server would on create; ``obj`` already has its uid and name."""
    if _is(rtype, "", "Pod") and _gates(obj) and (obj.get("spec") or {}).get("nodeName"):
        raise _invalid_pod(obj, "spec.nodeName", "cannot be set until all schedulingGates have been cleared")
    if _is(rtype, "", "Secret"):
        _merge_string_data(obj)
    elif _is(rtype, "batch", "Job"):
        _default_job(obj)
    elif _is(rtype, "", "Namespace"):
        # the namespace controller's finalizer: its contents go before it does
        spec = obj.setdefault("spec", {}) or {}
        spec.setdefault("finalizers", ["kubernetes"])
        obj["spec"] = spec


def prepare_for_update(rtype: ResourceType, obj: dict[str, Any], old: dict[str, Any]) -> None:
    """Fill in what the server would on update, and refuse what it would."""
    if _is(rtype, "", "Secret"):
        _merge_string_data(obj)
    elif _is(rtype, "", "Pod"):
        before = set(_gates(old))
        added = [gate for gate in _gates(obj) if gate not in before]
        if added:
            raise _invalid_pod(
                obj, "spec.schedulingGates", f"only deletion is allowed, but found new scheduling gate '{added[0]}'"
            )
