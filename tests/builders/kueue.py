"""Fluent builders for Kueue objects in tests, in the spirit of Kueue's pkg/util/testing/wrappers.go.

A test reads like the YAML a user writes::

    cq = ClusterQueueBuilder("team-a").cohort("research").quota("default", "cpu", 10, borrowing_limit=4).obj()
    wl = WorkloadBuilder("train", "team-a").queue("main").priority(100).pod_set(count=4, cpu="1").obj()
    node = NodeBuilder("n1").labels(**{"cloud.example.com/block": "b1"}).capacity(cpu="32", nvidia_com_gpu="8").doc()

One builder per object kind (ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Topology, Workload,
WorkloadPriorityClass; Node is in ``core``). ``doc()`` is the document as a user writes it (what the webhook, the
fake API server and the loaders read; ``spec(**fields)`` overrides raw spec fields, so a test can
build a document the rules must refuse); ``obj()`` is the real pydantic model read from that same
document through ``model_validate``, exactly what the loader would have read from YAML.
"""

from __future__ import annotations

from typing import Any, Self

from scheduler.api.kueue import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Topology,
    Workload,
    WorkloadPriorityClass,
)

from .core import resource_name

API_VERSION = "kueue.x-k8s.io/v1beta2"
EPOCH = "2026-01-01T00:00:00Z"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"


def timestamp(seconds: int) -> str:
    """An RFC 3339 timestamp ``seconds`` after the tests' epoch (under a day)."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"2026-01-01T{hours:02d}:{minutes:02d}:{secs:02d}Z"


def _envelope(kind: str, metadata: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, **fields}


def _quota_entry(
    resource: str, nominal: int | str, borrowing_limit: int | str | None, lending_limit: int | str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": resource, "nominalQuota": str(nominal)}
    if borrowing_limit is not None:
        entry["borrowingLimit"] = str(borrowing_limit)
    if lending_limit is not None:
        entry["lendingLimit"] = str(lending_limit)
    return entry


class _QuotaMixin:
    """One resource group whose flavors and resources are listed in the order quotas are added,
    and raw spec fields (camelCase, as in YAML) that override whatever the other calls set."""

    _flavors: dict[str, dict[str, dict[str, Any]]]
    _overrides: dict[str, Any]

    def spec(self, **fields: Any) -> Self:
        """Raw spec fields as a user spells them (``queueingStrategy="Random"``), applied last."""
        self._overrides.update(fields)
        return self

    def quota(
        self,
        flavor: str,
        resource: str,
        nominal: int | str,
        *,
        borrowing_limit: int | str | None = None,
        lending_limit: int | str | None = None,
    ) -> Self:
        self._flavors.setdefault(flavor, {})[resource] = _quota_entry(resource, nominal, borrowing_limit, lending_limit)
        return self

    def _resource_groups(self) -> list[dict[str, Any]]:
        if not self._flavors:
            return []
        resources: list[str] = []
        for per_flavor in self._flavors.values():
            resources.extend(r for r in per_flavor if r not in resources)
        flavors = [
            {
                "name": flavor,
                "resources": [per_flavor.get(r, _quota_entry(r, 0, None, None)) for r in resources],
            }
            for flavor, per_flavor in self._flavors.items()
        ]
        return [{"coveredResources": resources, "flavors": flavors}]


class ClusterQueueBuilder(_QuotaMixin):
    def __init__(self, name: str) -> None:
        self.name = name
        self._flavors = {}
        self._overrides = {}
        self._spec: dict[str, Any] = {"namespaceSelector": {}}

    def cohort(self, name: str) -> Self:
        self._spec["cohortName"] = name
        return self

    def namespace_selector(self, selector: dict[str, Any] | None) -> Self:
        if selector is None:
            self._spec.pop("namespaceSelector", None)
        else:
            self._spec["namespaceSelector"] = selector
        return self

    def strict_fifo(self) -> Self:
        self._spec["queueingStrategy"] = "StrictFIFO"
        return self

    def preemption(
        self,
        *,
        within_cluster_queue: str = "Never",
        reclaim_within_cohort: str = "Never",
        borrow_within_cohort: str | None = None,
        max_priority_threshold: int | None = None,
    ) -> Self:
        preemption: dict[str, Any] = {
            "withinClusterQueue": within_cluster_queue,
            "reclaimWithinCohort": reclaim_within_cohort,
        }
        if borrow_within_cohort is not None:
            borrow: dict[str, Any] = {"policy": borrow_within_cohort}
            if max_priority_threshold is not None:
                borrow["maxPriorityThreshold"] = max_priority_threshold
            preemption["borrowWithinCohort"] = borrow
        self._spec["preemption"] = preemption
        return self

    def flavor_fungibility(
        self, *, when_can_borrow: str = "MayStopSearch", when_can_preempt: str = "TryNextFlavor"
    ) -> Self:
        self._spec["flavorFungibility"] = {"whenCanBorrow": when_can_borrow, "whenCanPreempt": when_can_preempt}
        return self

    def fair_weight(self, weight: str) -> Self:
        self._spec["fairSharing"] = {"weight": weight}
        return self

    def stop_policy(self, policy: str) -> Self:
        self._spec["stopPolicy"] = policy
        return self

    def doc(self) -> dict[str, Any]:
        spec = {**self._spec, "resourceGroups": self._resource_groups(), **self._overrides}
        return _envelope("ClusterQueue", {"name": self.name}, spec=spec)

    def obj(self) -> ClusterQueue:
        return ClusterQueue.model_validate(self.doc())


class CohortBuilder(_QuotaMixin):
    def __init__(self, name: str) -> None:
        self.name = name
        self._flavors = {}
        self._overrides = {}
        self._spec: dict[str, Any] = {}

    def parent(self, name: str) -> Self:
        self._spec["parentName"] = name
        return self

    def doc(self) -> dict[str, Any]:
        spec = dict(self._spec)
        groups = self._resource_groups()
        if groups:
            spec["resourceGroups"] = groups
        return _envelope("Cohort", {"name": self.name}, spec={**spec, **self._overrides})

    def obj(self) -> Cohort:
        return Cohort.model_validate(self.doc())


class WorkloadBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._metadata: dict[str, Any] = {"name": name, "namespace": namespace, "creationTimestamp": EPOCH}
        self._spec: dict[str, Any] = {"podSets": []}
        self._status: dict[str, Any] = {}

    def queue(self, local_queue: str) -> Self:
        self._spec["queueName"] = local_queue
        return self

    def priority(self, value: int) -> Self:
        self._spec["priority"] = value
        return self

    def spec(self, **fields: Any) -> Self:
        """Raw spec fields as a user spells them (``maximumExecutionTimeSeconds=900``)."""
        self._spec.update(fields)
        return self

    def priority_class(self, name: str) -> Self:
        self._spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}
        return self

    def created(self, seconds: int) -> Self:
        self._metadata["creationTimestamp"] = timestamp(seconds)
        return self

    def pod_set(
        self,
        *,
        count: int = 1,
        name: str = "main",
        min_count: int | None = None,
        node_selector: dict[str, str] | None = None,
        required_topology: str | None = None,
        **requests: str,
    ) -> Self:
        """A pod set; ``requests`` per pod, with ``nvidia_com_gpu`` spelled for ``nvidia.com/gpu``;
        ``required_topology`` is the node label of the level all its pods must share (TAS)."""
        resources = {resource_name(key): value for key, value in requests.items()}
        pod_spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": resources}}]
        }
        if node_selector:
            pod_spec["nodeSelector"] = node_selector
        pod_set: dict[str, Any] = {"name": name, "count": count, "template": {"spec": pod_spec}}
        if required_topology is not None:
            pod_set["template"]["metadata"] = {"annotations": {REQUIRED_TOPOLOGY: required_topology}}
        if min_count is not None:
            pod_set["minCount"] = min_count
        self._spec["podSets"].append(pod_set)
        return self

    def admitted(self, cluster_queue: str, flavors: dict[str, str], at: int = 0) -> Self:
        """As exported from a cluster: ``status.admission`` set, quota reserved ``at`` seconds in."""
        assignments = [
            {"name": p["name"], "count": p["count"], "flavors": dict(flavors)} for p in self._spec["podSets"]
        ]
        self._status = {
            "conditions": [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": timestamp(at)}],
            "admission": {"clusterQueue": cluster_queue, "podSetAssignments": assignments},
        }
        return self

    def doc(self) -> dict[str, Any]:
        data = _envelope("Workload", dict(self._metadata), spec=dict(self._spec))
        if self._status:
            data["status"] = self._status
        return data

    def obj(self) -> Workload:
        return Workload.model_validate(self.doc())


class ResourceFlavorBuilder:
    def __init__(self, name: str) -> None:
        self.name = name
        self._spec: dict[str, Any] = {}

    def node_labels(self, **labels: str) -> Self:
        if labels:
            self._spec.setdefault("nodeLabels", {}).update(labels)
        return self

    def taint(self, key: str, effect: str = "NoSchedule", value: str | None = None) -> Self:
        taint = {"key": key, "effect": effect, **({"value": value} if value is not None else {})}
        self._spec.setdefault("nodeTaints", []).append(taint)
        return self

    def topology(self, name: str) -> Self:
        self._spec["topologyName"] = name
        return self

    def spec(self, **fields: Any) -> Self:
        """Raw spec fields as a user spells them (``nodeTaints=[...]``)."""
        self._spec.update(fields)
        return self

    def doc(self) -> dict[str, Any]:
        return _envelope("ResourceFlavor", {"name": self.name}, spec=dict(self._spec))

    def obj(self) -> ResourceFlavor:
        return ResourceFlavor.model_validate(self.doc())


def flavor(name: str, *, node_labels: dict[str, str] | None = None) -> ResourceFlavor:
    return ResourceFlavorBuilder(name).node_labels(**(node_labels or {})).obj()


class LocalQueueBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._metadata = {"name": name, "namespace": namespace}
        self._spec: dict[str, Any] = {}

    def cluster_queue(self, name: str) -> Self:
        self._spec["clusterQueue"] = name
        return self

    def stop_policy(self, policy: str) -> Self:
        self._spec["stopPolicy"] = policy
        return self

    def doc(self) -> dict[str, Any]:
        return _envelope("LocalQueue", dict(self._metadata), spec=dict(self._spec))

    def obj(self) -> LocalQueue:
        return LocalQueue.model_validate(self.doc())


def local_queue(name: str, namespace: str, cluster_queue: str) -> LocalQueue:
    return LocalQueueBuilder(name, namespace).cluster_queue(cluster_queue).obj()


class TopologyBuilder:
    """A Kueue Topology: its levels' node labels, outermost first (block, rack, hostname)."""

    def __init__(self, name: str, *levels: str) -> None:
        self.name = name
        self._levels = list(levels)

    def level(self, node_label: str) -> Self:
        self._levels.append(node_label)
        return self

    def doc(self) -> dict[str, Any]:
        return _envelope(
            "Topology", {"name": self.name}, spec={"levels": [{"nodeLabel": label} for label in self._levels]}
        )

    def obj(self) -> Topology:
        return Topology.model_validate(self.doc())


def priority_class(name: str, value: int) -> WorkloadPriorityClass:
    return WorkloadPriorityClass.model_validate(_envelope("WorkloadPriorityClass", {"name": name}, value=value))
