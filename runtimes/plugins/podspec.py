"""Small in-place edits of pod templates held as Kubernetes dicts (camelCase keys).

The renderer works on plain dicts rather than pydantic models: a dict keeps exactly what the
runtime author wrote, and an edit can never be lost to pydantic's "only fields that were set
are written" rule when a nested default object is filled in.
"""

from __future__ import annotations

from typing import Any

from runtimes.k8s.core import ResourceRequirements
from runtimes.k8s.quantity import parse_quantity


def find_container(pod_spec: dict[str, Any], name: str, *, init: bool = False) -> dict[str, Any] | None:
    key = "initContainers" if init else "containers"
    for container in pod_spec.get(key) or []:
        if container.get("name") == name:
            found: dict[str, Any] = container
            return found
    return None


def upsert_by_key(items: list[dict[str, Any]], new: list[dict[str, Any]], key: str) -> None:
    """Replace the item with the same ``key`` value in place, else append (Trainer's apply.Upsert*)."""
    for item in new:
        for index, existing in enumerate(items):
            if existing.get(key) == item.get(key):
                items[index] = item
                break
        else:
            items.append(item)


def upsert_env(container: dict[str, Any], env: list[dict[str, Any]]) -> None:
    upsert_by_key(container.setdefault("env", []), env, "name")


def upsert_volume_mounts(container: dict[str, Any], mounts: list[dict[str, Any]]) -> None:
    # Keyed by mountPath: one volume may be mounted at several paths (torchtune runtimes do).
    upsert_by_key(container.setdefault("volumeMounts", []), mounts, "mountPath")


def upsert_volumes(pod_spec: dict[str, Any], volumes: list[dict[str, Any]]) -> None:
    upsert_by_key(pod_spec.setdefault("volumes", []), volumes, "name")


def upsert_port(container: dict[str, Any], port: int) -> None:
    ports = container.setdefault("ports", [])
    if not any(existing.get("containerPort") == port for existing in ports):
        ports.append({"containerPort": port})


def merge_resources(container: dict[str, Any], resources: ResourceRequirements) -> None:
    """Merge ``resources`` over the container's: per resource name, the new value wins."""
    merged = dict(container.get("resources") or {})
    for part in ("requests", "limits"):
        given = resources.to_dict().get(part)
        if given:
            merged[part] = {**(merged.get(part) or {}), **given}
    if merged:
        container["resources"] = merged


def metadata_labels(obj: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return labels


def set_metadata_entries(obj: dict[str, Any], field: str, entries: dict[str, str]) -> None:
    """Add labels or annotations (``field``) to ``obj['metadata']``, creating what is missing."""
    if not entries:
        return
    metadata = obj.setdefault("metadata", {})
    metadata[field] = {**(metadata.get(field) or {}), **entries}


def gpu_count(resources: dict[str, Any]) -> int:
    """Trainer's GetNumGPUPerNode: the first resource whose name contains "gpu" (0 without one).

    Values may be Quantities or the strings of a Kubernetes dict.
    """
    for name, quantity in resources.items():
        if "gpu" in name.lower():
            return int(parse_quantity(str(quantity)))
    return 0
