"""Builders for core/v1 objects in tests: Nodes (fluent, like the Kueue builders) and Namespaces."""

from __future__ import annotations

from typing import Any, Self

from runtimes.k8s.core import Node

HOSTNAME = "kubernetes.io/hostname"


def resource_name(key: str) -> str:
    """A keyword argument's spelling of a resource name: ``nvidia_com_gpu`` is ``nvidia.com/gpu``."""
    return key.replace("nvidia_com_", "nvidia.com/")


class NodeBuilder:
    """A core/v1 Node: labels, capacity (also its allocatable), readiness, taints."""

    def __init__(self, name: str) -> None:
        self._metadata: dict[str, Any] = {"name": name}
        self._spec: dict[str, Any] = {}
        self._resources: dict[str, str] = {}
        self._ready: bool | None = None

    def labels(self, **labels: str) -> Self:
        """Labels; a key that is no Python name goes in as ``**{"cloud.example.com/block": "b1"}``."""
        self._metadata.setdefault("labels", {}).update(labels)
        return self

    def annotations(self, **annotations: str) -> Self:
        self._metadata.setdefault("annotations", {}).update(annotations)
        return self

    def capacity(self, **resources: str) -> Self:
        """Capacity and allocatable, ``nvidia_com_gpu`` spelled for ``nvidia.com/gpu``."""
        self._resources.update({resource_name(key): value for key, value in resources.items()})
        return self

    def ready(self, ready: bool = True) -> Self:
        """Give the node a Ready condition (a node with none counts as Ready)."""
        self._ready = ready
        return self

    def unschedulable(self) -> Self:
        self._spec["unschedulable"] = True
        return self

    def taint(self, key: str, effect: str = "NoSchedule", value: str | None = None) -> Self:
        taint = {"key": key, "effect": effect, **({"value": value} if value is not None else {})}
        self._spec.setdefault("taints", []).append(taint)
        return self

    def doc(self) -> dict[str, Any]:
        data: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": dict(self._metadata)}
        if self._spec:
            data["spec"] = dict(self._spec)
        status: dict[str, Any] = {}
        if self._resources:
            status["allocatable"] = dict(self._resources)
            status["capacity"] = dict(self._resources)
        if self._ready is not None:
            status["conditions"] = [{"type": "Ready", "status": "True" if self._ready else "False"}]
        if status:
            data["status"] = status
        return data

    def obj(self) -> Node:
        return Node.model_validate(self.doc())


def node(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    hostname: bool = False,
    ready: bool | None = True,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    **capacity: str,
) -> dict[str, Any]:
    """A Node document in one call: ``node("n1", hostname=True, cpu="8", nvidia_com_gpu="8")``.

    ``hostname`` adds the ``kubernetes.io/hostname`` label a kubelet sets; ``ready=None`` leaves
    the Ready condition out; ``capacity`` is also the allocatable.
    """
    builder = NodeBuilder(name).capacity(**capacity)
    if hostname:
        builder.labels(**{HOSTNAME: name})
    if labels:
        builder.labels(**labels)
    if ready is not None:
        builder.ready(ready)
    for taint in taints or []:
        builder.taint(taint["key"], taint.get("effect", "NoSchedule"), taint.get("value"))
    if unschedulable:
        builder.unschedulable()
    return builder.doc()


def namespace(name: str, **labels: str) -> dict[str, Any]:
    """A core/v1 Namespace with ``labels`` (a key that is no Python name goes in as ``**{...}``)."""
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
