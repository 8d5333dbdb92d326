"""Discovery documents: /version, /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>."""

from __future__ import annotations

from typing import Any

from .kinds import ALL_VERBS, Registry, ResourceType
from .self_reviews import DISCOVERY as REVIEW_GROUPS
from .self_reviews import discovery_resources as review_resources


def version_info() -> dict[str, Any]:
    return {"major": "1", "minor": "33", "gitVersion": "v1.33.0-trainyard-fake", "platform": "linux/amd64"}


def core_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def _groups(registry: Registry) -> dict[str, list[str]]:
    """Every named group served: the stored kinds' and the review groups' (create-only)."""
    return {**registry.groups(), **{name: ["v1"] for name in REVIEW_GROUPS}}


def group_list(registry: Registry) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name, versions) for name, versions in _groups(registry).items()],
    }


def group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = _groups(registry).get(name)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


# The short names and categories the real server and the upstream CRDs declare (kubectl get cq).
SHORT_NAMES: dict[tuple[str, str], list[str]] = {
    ("", "Namespace"): ["ns"],
    ("", "Node"): ["no"],
    ("", "Pod"): ["po"],
    ("", "Event"): ["ev"],
    ("", "ConfigMap"): ["cm"],
    ("", "ServiceAccount"): ["sa"],
    ("kueue.x-k8s.io", "ClusterQueue"): ["cq"],
    ("kueue.x-k8s.io", "LocalQueue"): ["queue", "queues", "lq"],
    ("kueue.x-k8s.io", "ResourceFlavor"): ["flavor", "flavors", "rf"],
    ("kueue.x-k8s.io", "Workload"): ["wl"],
    ("kueue.x-k8s.io", "WorkloadPriorityClass"): ["wpc"],
}
CATEGORIES: dict[str, list[str]] = {
    "": ["all"],
    "batch": ["all"],
    "kueue.x-k8s.io": ["kueue"],
}


def _resource(t: ResourceType) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": t.plural,
        "singularName": t.kind.lower(),
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": list(ALL_VERBS),
    }
    short = SHORT_NAMES.get((t.group, t.kind))
    if short:
        found["shortNames"] = short
    if t.kind in ("Pod", "Job") or t.group == "kueue.x-k8s.io":
        found["categories"] = CATEGORIES.get(t.group, [])
    return found


def resource_list(registry: Registry, group_name: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group_name, version)
    resources: list[dict[str, Any]] = review_resources(group_name) if version == "v1" else []
    if not types and not resources:
        return None
    for t in types:
        resources.append(_resource(t))
        if t.status_subresource:
            resources.append(
                {
                    "name": f"{t.plural}/status",
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "kind": t.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if (t.group, t.kind) == ("", "Pod"):
            resources.append(
                {"name": "pods/binding", "singularName": "", "namespaced": True, "kind": "Binding", "verbs": ["create"]}
            )
            resources.append(
                {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]}
            )
    group_version = f"{group_name}/{version}" if group_name else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}
