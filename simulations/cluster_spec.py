"""A GPU cluster from a short spec: zones × spines × blocks × nodes, NVLink domains, quotas.

``ClusterSpec`` describes the hardware; ``build_nodes`` turns it into core/v1 Nodes carrying
the KWOK fake-node annotation and one topology label per level, and ``build_topology`` into the
Kueue ``Topology`` that reads those labels. ``QueueSpec`` describes teams and their GPU shares;
``build_queues`` gives the ResourceFlavor, Cohort, ClusterQueues, LocalQueues and priority
classes. The same objects feed the simulator and ``trainyard kwok export``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Topology,
    WorkloadPriorityClass,
)
from simulations.kwok import KWOK_NODE_ANNOTATION

GPU_RESOURCE = "nvidia.com/gpu"
ZONE_LABEL = "topology.kubernetes.io/zone"
SPINE_LABEL = "network.topology.nvidia.com/spine"
BLOCK_LABEL = "network.topology.nvidia.com/block"
NVLINK_LABEL = "nvidia.com/gpu.clique"
HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
TOPOLOGY_NAME = "gpu-topology"
LOCAL_QUEUE_NAME = "default"

PRIORITY_CLASSES = {"low": 100, "normal": 1000, "high": 10000}


@dataclass(frozen=True)
class ClusterSpec:
    """The hardware. ``nvlink_nodes`` nodes share one NVLink domain inside a block (1 = per node)."""

    zones: int = 1
    spines_per_zone: int = 4
    blocks_per_spine: int = 8
    nodes_per_block: int = 32
    gpus_per_node: int = 8
    nvlink_nodes: int = 1
    gpu_model: str = "H100"
    cpu: int = 224
    memory_gi: int = 2048
    pods: int = 110
    name_prefix: str = "gpu-node"

    @property
    def node_count(self) -> int:
        return self.zones * self.spines_per_zone * self.blocks_per_spine * self.nodes_per_block

    @property
    def gpu_count(self) -> int:
        return self.node_count * self.gpus_per_node

    @property
    def levels(self) -> tuple[str, ...]:
        """Topology levels top→down; the NVLink level exists only when it groups several nodes."""
        middle = (NVLINK_LABEL,) if self.nvlink_nodes > 1 else ()
        return (ZONE_LABEL, SPINE_LABEL, BLOCK_LABEL, *middle, HOSTNAME_LABEL)

    def validate(self, where: str = "cluster") -> list[str]:
        problems = []
        for name in (
            "zones",
            "spines_per_zone",
            "blocks_per_spine",
            "nodes_per_block",
            "gpus_per_node",
            "cpu",
            "memory_gi",
        ):
            if getattr(self, name) < 1:
                problems.append(f"{where}.{name} must be at least 1, got {getattr(self, name)}")
        if self.nvlink_nodes < 1 or self.nodes_per_block % self.nvlink_nodes:
            problems.append(
                f"{where}.nvlink_nodes must divide nodes_per_block ({self.nodes_per_block}), got {self.nvlink_nodes}"
            )
        return problems


def node_labels(spec: ClusterSpec, zone: int, spine: int, block: int, index: int) -> dict[str, str]:
    """Labels of one node; domain values are globally unique so a value alone names a domain."""
    spine_name = f"z{zone}-s{spine}"
    block_name = f"{spine_name}-b{block}"
    name = f"{spec.name_prefix}-{block_name}-n{index}"
    labels = {
        "type": "kwok",
        ZONE_LABEL: f"zone-{zone}",
        SPINE_LABEL: spine_name,
        BLOCK_LABEL: block_name,
        HOSTNAME_LABEL: name,
        GPU_PRODUCT_LABEL: spec.gpu_model,
    }
    if spec.nvlink_nodes > 1:
        labels[NVLINK_LABEL] = f"{block_name}-nvl{index // spec.nvlink_nodes}"
    return labels


def node_document(
    name: str,
    labels: dict[str, str],
    allocatable: dict[str, str],
) -> dict[str, Any]:
    """A fake Node as KWOK expects it: annotation-selected, Ready, with capacity = allocatable."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {},
        "status": {
            "allocatable": dict(allocatable),
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def build_node_documents(spec: ClusterSpec) -> list[dict[str, Any]]:
    allocatable = {
        "cpu": str(spec.cpu),
        "memory": f"{spec.memory_gi}Gi",
        GPU_RESOURCE: str(spec.gpus_per_node),
        "pods": str(spec.pods),
    }
    documents = []
    for zone in range(spec.zones):
        for spine in range(spec.spines_per_zone):
            for block in range(spec.blocks_per_spine):
                for index in range(spec.nodes_per_block):
                    labels = node_labels(spec, zone, spine, block, index)
                    documents.append(node_document(labels[HOSTNAME_LABEL], labels, allocatable))
    return documents


def nodes_from_documents(documents: list[dict[str, Any]]) -> list[Node]:
    """Validate one Node per distinct capacity and copy it for the rest (10,000 nodes in ~0.1 s).

    Copies share the status (read only); each gets its own metadata.
    """
    templates: dict[str, Node] = {}
    nodes = []
    for document in documents:
        key = repr(document["status"]) + repr(document.get("spec"))
        template = templates.get(key)
        if template is None:
            template = templates[key] = Node.model_validate(document)
            nodes.append(template)
            continue
        raw = document["metadata"]
        metadata = template.metadata.model_copy(
            update={
                "name": raw["name"],
                "labels": dict(raw.get("labels") or {}),
                "annotations": dict(raw.get("annotations") or {}),
            }
        )
        nodes.append(template.model_copy(update={"metadata": metadata}))
    return nodes


def build_nodes(spec: ClusterSpec) -> list[Node]:
    return nodes_from_documents(build_node_documents(spec))


def build_topology(levels: Sequence[str], name: str = TOPOLOGY_NAME) -> Topology:
    return Topology.model_validate(
        {"metadata": {"name": name}, "spec": {"levels": [{"nodeLabel": label} for label in levels]}}
    )


# ------------------------------------------------------------------------------------- queues


@dataclass(frozen=True)
class TeamSpec:
    name: str
    share: float  # fraction of the cluster's GPUs as nominal quota
    borrowing_limit_share: float | None = None  # None: may borrow the whole cohort
    weight: float = 1.0  # fair-sharing weight


@dataclass(frozen=True)
class QueueSpec:
    teams: tuple[TeamSpec, ...] = field(
        default_factory=lambda: (
            TeamSpec("team-a", 0.25),
            TeamSpec("team-b", 0.25),
            TeamSpec("team-c", 0.25),
            TeamSpec("team-d", 0.25),
        )
    )
    cohort: str = "gpu-cluster"
    reclaim_within_cohort: str = "Any"
    within_cluster_queue: str = "LowerPriority"
    queueing_strategy: str = "BestEffortFIFO"


def flavor_name(gpu_model: str) -> str:
    return f"gpu-{gpu_model.lower()}"


def build_flavor(gpu_model: str, topology: str | None = TOPOLOGY_NAME) -> ResourceFlavor:
    spec: dict[str, Any] = {"nodeLabels": {GPU_PRODUCT_LABEL: gpu_model}}
    if topology is not None:
        spec["topologyName"] = topology
    return ResourceFlavor.model_validate({"metadata": {"name": flavor_name(gpu_model)}, "spec": spec})


def build_queues(
    queues: QueueSpec,
    capacity_by_model: dict[str, dict[str, int]],
    topology: str | None = TOPOLOGY_NAME,
) -> list[Resource]:
    """Flavors (one per GPU model), a Cohort, a ClusterQueue + LocalQueue per team, priorities.

    ``capacity_by_model`` maps a GPU model to its cluster totals (``cpu`` in cores,
    ``memory`` in GiB, GPUs under ``nvidia.com/gpu``); each team's nominal quota is its share
    of every total, rounded down.
    """
    objects: list[Resource] = [build_flavor(model, topology) for model in sorted(capacity_by_model)]
    objects.append(Cohort.model_validate({"metadata": {"name": queues.cohort}}))
    for team in queues.teams:
        flavors = []
        for model in sorted(capacity_by_model):
            totals = capacity_by_model[model]
            resources = []
            for resource, unit in (("cpu", ""), ("memory", "Gi"), (GPU_RESOURCE, "")):
                quota: dict[str, Any] = {
                    "name": resource,
                    "nominalQuota": f"{int(totals[resource] * team.share)}{unit}",
                }
                if team.borrowing_limit_share is not None:
                    quota["borrowingLimit"] = f"{int(totals[resource] * team.borrowing_limit_share)}{unit}"
                resources.append(quota)
            flavors.append({"name": flavor_name(model), "resources": resources})
        spec: dict[str, Any] = {
            "cohortName": queues.cohort,
            "queueingStrategy": queues.queueing_strategy,
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU_RESOURCE], "flavors": flavors}],
            "preemption": {
                "reclaimWithinCohort": queues.reclaim_within_cohort,
                "withinClusterQueue": queues.within_cluster_queue,
            },
        }
        if team.weight != 1.0:
            spec["fairSharing"] = {"weight": str(team.weight)}
        objects.append(ClusterQueue.model_validate({"metadata": {"name": team.name}, "spec": spec}))
        objects.append(
            LocalQueue.model_validate(
                {"metadata": {"name": LOCAL_QUEUE_NAME, "namespace": team.name}, "spec": {"clusterQueue": team.name}}
            )
        )
    for name, value in PRIORITY_CLASSES.items():
        objects.append(WorkloadPriorityClass.model_validate({"metadata": {"name": name}, "value": value}))
    return objects


def capacity_by_model(spec: ClusterSpec) -> dict[str, dict[str, int]]:
    return {
        spec.gpu_model: {
            "cpu": spec.cpu * spec.node_count,
            "memory": spec.memory_gi * spec.node_count,
            GPU_RESOURCE: spec.gpu_count,
        }
    }
