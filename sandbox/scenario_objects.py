"""What a sandbox cluster is seeded with: a scenario's Namespaces, Nodes, Kueue objects and Stages.

``scenario_objects(name_or_path_or_scenario)`` builds them from the simulations scenario
catalogue (``simulations.scenarios``): the same Nodes, ResourceFlavors, Cohort, ClusterQueues,
LocalQueues, WorkloadPriorityClasses and Topology the embedded simulator admits against, plus a
Namespace per LocalQueue and the KWOK Stage objects that will move the Nodes and Pods. Runtimes
(ClusterTrainingRuntimes) are trainyard's bundled manifests, added by whoever starts the sandbox.

Without a scenario the sandbox is ``SANDBOX_SCENARIO``: 8 nodes × 8 GPUs in two blocks, four
teams — small enough to read with kubectl, big enough to queue, borrow and preempt.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulations.cluster_spec import ClusterSpec
from simulations.kwok import Stage, load_stages
from simulations.scenarios import Scenario, build, resolve_scenario
from simulations.yamlsource import load_documents

SANDBOX_SCENARIO = Scenario(
    name="sandbox",
    description="8 nodes × 8 H100 (1 spine × 2 blocks × 4 nodes), 4 teams: the default sandbox",
    cluster=ClusterSpec(zones=1, spines_per_zone=1, blocks_per_spine=2, nodes_per_block=4),
)

# The order a real `kubectl apply` needs: namespaces before what lives in them, flavors and
# cohorts before the queues that name them.
_KIND_ORDER = (
    "Namespace",
    "Stage",
    "Node",
    "Topology",
    "ResourceFlavor",
    "Cohort",
    "WorkloadPriorityClass",
    "ClusterQueue",
    "LocalQueue",
)


@dataclass
class ScenarioObjects:
    """The documents to seed, in apply order, and the parsed Stages the KWOK stand-in plays."""

    scenario: Scenario
    documents: list[dict[str, Any]]
    stages: list[Stage] = field(default_factory=list)

    def of_kind(self, kind: str) -> Iterator[dict[str, Any]]:
        return (d for d in self.documents if d.get("kind") == kind)

    @property
    def node_count(self) -> int:
        return sum(1 for _ in self.of_kind("Node"))


def resolve(scenario: Scenario | str | Path | None) -> Scenario:
    """A Scenario from itself, a built-in name or a YAML path (``SimulationInputError`` if none)."""
    if scenario is None:
        return SANDBOX_SCENARIO
    if isinstance(scenario, Scenario):
        return scenario
    if str(scenario) == SANDBOX_SCENARIO.name:
        return SANDBOX_SCENARIO
    return resolve_scenario(str(scenario))


def stage_documents(paths: tuple[Path, ...]) -> list[dict[str, Any]]:
    """The Stage objects in files and directories, as documents (for the API server to serve)."""
    found: list[dict[str, Any]] = []
    for path in paths:
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
        for file in files:
            found.extend(dict(document.data) for document in load_documents(file) if isinstance(document.data, dict))
    return found


def scenario_objects(scenario: Scenario | str | Path | None = None) -> ScenarioObjects:
    """Everything a sandbox for ``scenario`` is seeded with (see the module docstring)."""
    resolved = resolve(scenario)
    built = build(resolved)
    documents: list[dict[str, Any]] = [obj.to_dict() for obj in built.objects]
    namespaces = sorted({str(d["metadata"]["namespace"]) for d in documents if d["metadata"].get("namespace")})
    documents.extend({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces)
    documents.extend(_with_node_info(node) for node in built.node_documents)
    documents.extend(stage_documents(resolved.stages))
    for document in documents:
        document.setdefault("apiVersion", _API_VERSIONS.get(str(document.get("kind")), "v1"))
    order = {kind: index for index, kind in enumerate(_KIND_ORDER)}
    documents.sort(key=lambda d: order.get(str(d.get("kind")), len(order)))
    return ScenarioObjects(resolved, documents, load_stages(resolved.stages))


def _with_node_info(node: dict[str, Any]) -> dict[str, Any]:
    """The node as KWOK's examples write one: ``nodeInfo`` says it is fake (kubectl's VERSION column).

    Every NodeSystemInfo field is there, empty when KWOK gives none: the real API server always
    writes them (Go strings without omitempty), and clients such as the official ``kubernetes``
    package refuse a nodeInfo that lacks one.
    """
    found = {**node, "status": dict(node.get("status") or {})}
    fake = {"kubeletVersion": "fake", "kubeProxyVersion": "fake", "operatingSystem": "linux", "architecture": "amd64"}
    found["status"].setdefault("nodeInfo", {**dict.fromkeys(NODE_SYSTEM_INFO_FIELDS, ""), **fake})
    return found


NODE_SYSTEM_INFO_FIELDS = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)


_API_VERSIONS = {
    "Topology": "kueue.x-k8s.io/v1beta2",
    "ResourceFlavor": "kueue.x-k8s.io/v1beta2",
    "Cohort": "kueue.x-k8s.io/v1beta2",
    "WorkloadPriorityClass": "kueue.x-k8s.io/v1beta2",
    "ClusterQueue": "kueue.x-k8s.io/v1beta2",
    "LocalQueue": "kueue.x-k8s.io/v1beta2",
}
