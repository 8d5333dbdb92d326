"""The topology AdmissionCheck's cluster as its tests seed it: blocks of 8-GPU nodes, a ClusterQueue
with the check, and Workloads as Kueue leaves them after reserving quota."""

from __future__ import annotations

from typing import Any

from builders import (
    ClusterQueueBuilder,
    NodeBuilder,
    ResourceFlavorBuilder,
    TopologyBuilder,
    WorkloadBuilder,
    namespace,
)
from fakeapi.fixtures import FakeApi

from scheduler.api.topology_assignment import HOSTNAME_LABEL
from scheduler.kube import KubeClient

NS = "team-a"
CHECK = "trainyard-topology"
BLOCK = "example.com/block"
FLAVOR = "gpu"


def check_doc(parameters: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"controllerName": "trainyard.io/topology"}
    if parameters is not None:
        spec["parameters"] = parameters
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": CHECK}, "spec": spec}


def seed_cluster(fake_api: FakeApi, *, blocks: int = 2, nodes_per_block: int = 2) -> None:
    """Nodes of 8 GPUs in blocks, a flavor without topologyName (Kueue's TAS stays out), a
    ClusterQueue with the check, the check naming Topology ``blocks``."""
    seed = fake_api.server.seed
    seed(namespace(NS))
    seed(TopologyBuilder("blocks", BLOCK, HOSTNAME_LABEL).doc())
    seed(ResourceFlavorBuilder(FLAVOR).node_labels(pool="p").doc())
    for block in range(blocks):
        for index in range(nodes_per_block):
            name = f"b{block}-n{index}"
            labels = {"pool": "p", BLOCK: f"b{block}", HOSTNAME_LABEL: name}
            seed(NodeBuilder(name).labels(**labels).capacity(cpu="64", memory="512Gi", nvidia_com_gpu="8").doc())
    seed(
        ClusterQueueBuilder("cq")
        .quota(FLAVOR, "nvidia.com/gpu", 1000)
        .spec(admissionChecksStrategy={"admissionChecks": [{"name": CHECK}]})
        .doc()
    )
    seed(check_doc({"apiGroup": "kueue.x-k8s.io", "kind": "Topology", "name": "blocks"}))


async def reserve(client: KubeClient, fake_api: FakeApi, name: str, pods: int, gpus: int = 8) -> None:
    """A Workload as Kueue leaves it after reserving quota: admission, QuotaReserved, the check Pending."""
    fake_api.server.seed(WorkloadBuilder(name, NS).queue("lq").pod_set(count=pods, nvidia_com_gpu=str(gpus)).doc())
    await client.patch("Workload", name, {"status": reservation(pods, gpus)}, NS, status=True)


def reservation(pods: int, gpus: int = 8, retries: int = 0) -> dict[str, Any]:
    check: dict[str, Any] = {
        "name": CHECK,
        "state": "Pending",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    if retries:
        check["retryCount"] = retries
    assignment = {
        "name": "main",
        "flavors": {"nvidia.com/gpu": FLAVOR},
        "resourceUsage": {"nvidia.com/gpu": str(pods * gpus)},
        "count": pods,
    }
    return {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [assignment]},
        "conditions": [condition("QuotaReserved", True), condition("Admitted", False)],
        "admissionChecks": [check],
    }


def condition(kind: str, status: bool) -> dict[str, Any]:
    value = "True" if status else "False"
    return {
        "type": kind,
        "status": value,
        "reason": kind,
        "message": kind,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
