"""Plain Pods and pod groups, as Kueue's ``pod`` integration makes their Workloads.

A single Pod with a queue-name label is one Workload ``pod-<name>-<hash5>`` with one pod set
``main`` of count 1. Pods labelled ``kueue.x-k8s.io/pod-group-name`` and annotated
``kueue.x-k8s.io/pod-group-total-count`` form one Workload named after the group, admitted
as a gang once all its pods exist: one pod set per role (pods of the same shape), named by the
role's hash and counting its pods, at most 8 roles. The role hash is a SHA-256 of the pod's
shape (its non-Kueue labels, containers' resources and ports, node selector, affinity,
tolerations, runtime class, priority) cut to 8 hex digits, as Kueue's ``getRoleHash``; the
digits differ from Kueue's (Go's JSON of the shape is not reproduced byte for byte), the
grouping is the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from runtimes.errors import FieldError
from scheduler.api.kueue import Workload
from scheduler.jobs.common import JobDocument, JobError, build_workload, pod_set, pod_template

GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
IS_GROUP_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/is-group-workload"
MAX_ROLES = 8


def _template_of(pod: JobDocument) -> dict[str, Any]:
    metadata = {key: pod.metadata[key] for key in ("labels", "annotations") if key in pod.metadata}
    return pod_template({"metadata": metadata, "spec": pod.spec}, "")


def role_hash(pod: JobDocument) -> str:
    spec = pod.spec

    def containers(key: str) -> list[dict[str, Any]]:
        listed = spec.get(key) or []
        return [{"resources": c.get("resources"), "ports": c.get("ports")} for c in listed if isinstance(c, dict)]

    shape = {
        "metadata": {"labels": {k: v for k, v in pod.labels.items() if not k.startswith("kueue.x-k8s.io/")}},
        "spec": {
            "initContainers": containers("initContainers"),
            "containers": containers("containers"),
            "nodeSelector": spec.get("nodeSelector"),
            "affinity": spec.get("affinity"),
            "tolerations": spec.get("tolerations"),
            "runtimeClassName": spec.get("runtimeClassName"),
            "priority": spec.get("priority"),
        },
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:8]


def derive_single(pod: JobDocument) -> Workload:
    return build_workload(pod, [pod_set("main", _template_of(pod), 1, None)])


@dataclass
class PodGroups:
    """Pods sorted into single pods and groups (``namespace/group`` -> its pods)."""

    singles: list[JobDocument] = field(default_factory=list)
    groups: dict[str, list[JobDocument]] = field(default_factory=dict)


def sort_pods(pods: Iterable[JobDocument]) -> PodGroups:
    sorted_pods = PodGroups()
    for pod in pods:
        group = pod.labels.get(GROUP_NAME_LABEL)
        if group:
            sorted_pods.groups.setdefault(f"{pod.namespace}/{group}", []).append(pod)
        else:
            sorted_pods.singles.append(pod)
    return sorted_pods


def group_total(pods: list[JobDocument]) -> int:
    """The group's total count, the same on every pod (Kueue refuses pods that disagree)."""
    totals: dict[str, str] = {}
    for pod in pods:
        text = pod.annotations.get(GROUP_TOTAL_COUNT_ANNOTATION)
        path = f"metadata.annotations[{GROUP_TOTAL_COUNT_ANNOTATION}]"
        if text is None:
            raise JobError([FieldError(path, f"is required on every pod of a pod group (pod {pod.name!r} has none)")])
        if not text.isdigit() or int(text) < 1:
            raise JobError([FieldError(path, f"must be a positive whole number, got {text!r} on pod {pod.name!r}")])
        totals[pod.name] = text
    if len(set(totals.values())) > 1:
        shown = ", ".join(f"{name}={total}" for name, total in totals.items())
        raise JobError(
            [
                FieldError(
                    f"metadata.annotations[{GROUP_TOTAL_COUNT_ANNOTATION}]",
                    f"differs between the group's pods: {shown}",
                )
            ]
        )
    return int(next(iter(totals.values())))


def derive_group(group_name: str, pods: list[JobDocument]) -> Workload:
    """The group's Workload; raises JobError for pods Kueue would refuse to group."""
    roles: dict[str, dict[str, Any]] = {}
    for pod in pods:
        role = role_hash(pod)
        if role in roles:
            roles[role]["count"] += 1
        else:
            roles[role] = pod_set(role, _template_of(pod), 1, None)
    if len(roles) > MAX_ROLES:
        raise JobError(
            [FieldError("spec", f"a pod group may have at most {MAX_ROLES} roles (pod shapes), got {len(roles)}")]
        )
    pod_sets = [roles[name] for name in sorted(roles)]
    return build_workload(pods[0], pod_sets, name=group_name, annotations={IS_GROUP_WORKLOAD_ANNOTATION: "true"})
