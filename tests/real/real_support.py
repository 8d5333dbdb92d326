"""What the real tier's tests share: node pools with their own queues, a TrainJob; waits use tests/eventually.py.

A ``Pool`` is one test's slice of the shared real cluster: a namespace, KWOK nodes labelled with
the pool's name (two blocks of hosts), a Topology, a ResourceFlavor selecting exactly those
nodes, a ClusterQueue with the pool's quota and the namespace's ``default`` LocalQueue (the one
trainyard's mutating webhook fills a TrainJob's queue-name from). Tests never see each other's
nodes or queues, so they may run in any order on one cluster.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from builders import ClusterQueueBuilder, LocalQueueBuilder, NodeBuilder, ResourceFlavorBuilder, TopologyBuilder
from builders import trainjob as build_trainjob

from sandbox.real.control_plane import RealCluster
from sandbox.real.install import service_account_kubeconfig
from sandbox.real.rest import RestClient, RestError
from simulations.kwok import KWOK_NODE_ANNOTATION, POD_COMPLETE_DELAY_ANNOTATION
from tests.eventually import eventually_blocking

T = TypeVar("T")
POOL_LABEL = "trainyard.test/pool"
BLOCK_LABEL = "trainyard.test/block"
HOSTNAME_LABEL = "kubernetes.io/hostname"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def service_kubeconfig(cluster: RealCluster, name: str = "trainyard.kubeconfig") -> Path:
    return service_account_kubeconfig(cluster.admin, cluster.workdir / name, cluster.url, cluster.admin_ca_pem)


def short_name(test_name: str) -> str:
    """A DNS label from a test's name (lower case, dashes, at most 40 characters)."""
    return re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")


@dataclass
class Pool:
    admin: RestClient
    name: str
    namespace: str
    nodes: list[str]
    flavor: str
    cluster_queue: str
    documents: list[dict[str, Any]] = field(default_factory=list)

    def delete(self) -> None:
        self.admin.delete("v1", "Namespace", self.namespace)
        for document in reversed(self.documents):
            if document["kind"] in ("Namespace", "LocalQueue"):
                continue
            metadata = document["metadata"]
            self.admin.delete(document["apiVersion"], document["kind"], metadata["name"], metadata.get("namespace"))


@dataclass
class PoolFactory:
    cluster: RealCluster
    test_name: str
    made: list[Pool]

    def __call__(
        self,
        *,
        blocks: int = 2,
        nodes_per_block: int = 2,
        gpus_per_node: int = 8,
        quota_gpus: int | None = None,
        cohort: str | None = None,
        preemption: dict[str, str] | None = None,
        suffix: str = "",
        namespace: str | None = None,
    ) -> Pool:
        name = short_name(f"{self.test_name}{suffix}")
        namespace = namespace or name
        admin = self.cluster.admin
        documents: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            TopologyBuilder(name, BLOCK_LABEL, HOSTNAME_LABEL).doc(),
            ResourceFlavorBuilder(name).node_labels(**{POOL_LABEL: name}).topology(name).doc(),
        ]
        nodes = []
        for block in range(blocks):
            for index in range(nodes_per_block):
                node = f"{name}-b{block}-n{index}"
                nodes.append(node)
                document = (
                    NodeBuilder(node)
                    .labels(**{POOL_LABEL: name, BLOCK_LABEL: f"{name}-b{block}", HOSTNAME_LABEL: node})
                    .capacity(cpu="64", memory="512Gi", pods="110", nvidia_com_gpu=str(gpus_per_node))
                    .doc()
                )
                document["metadata"]["annotations"] = {KWOK_NODE_ANNOTATION: "fake"}
                documents.append(document)
        quota = quota_gpus if quota_gpus is not None else blocks * nodes_per_block * gpus_per_node
        queue = (
            ClusterQueueBuilder(name)
            .quota(name, "cpu", 10_000)
            .quota(name, "memory", "100Ti")
            .quota(name, "nvidia.com/gpu", quota)
        )
        if cohort:
            queue = queue.cohort(cohort)
        if preemption:
            queue = queue.preemption(**preemption)
        documents.append(queue.doc())
        documents.append(LocalQueueBuilder("default", namespace).cluster_queue(name).doc())
        for document in documents:
            admin.apply(document)
        made = Pool(admin, name, namespace, nodes, name, name, documents)
        self.made.append(made)
        if quota >= gpus_per_node:
            _wait_until_served(admin, namespace, min(len(nodes), quota // gpus_per_node), gpus_per_node)
        return made


def _wait_until_served(admin: RestClient, namespace: str, pods: int, gpus: int) -> None:
    """Until trainyard's webhook has seen the pool: a server-side dry run of a TrainJob as large as
    the pool passes the webhook's "can it ever fit" check. The webhook judges from its informers'
    cache, which may trail a just-applied Node or LocalQueue by a moment on a loaded machine."""
    collection = admin.mapper.resource(TRAINER_API, "TrainJob").collection(namespace)
    probe = json.dumps(trainjob("probe", namespace, nodes=pods, gpus=gpus)).encode()

    def accepted() -> bool:
        try:
            created = admin.request("POST", f"{collection}?dryRun=All", probe)
        except RestError as error:
            if "can never be admitted" in str(error):
                return False
            raise
        # queued into the namespace's default LocalQueue, so the fit check ran on the pool
        return "kueue.x-k8s.io/queue-name" in (created["metadata"].get("labels") or {})

    eventually_blocking(accepted, timeout=60, what=f"trainyard's webhook seeing the {namespace} pool")


def trainjob(
    name: str,
    namespace: str,
    *,
    nodes: int = 2,
    gpus: int = 8,
    run_seconds: float = 3.0,
    runtime: str = "torch-distributed",
    extra_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A TrainJob as a user writes it: no queue label (the webhook adds the namespace's default)."""
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    annotations = {POD_COMPLETE_DELAY_ANNOTATION: f"{int(run_seconds * 1000)}ms"}
    # Trainer v2.3's way to reach the pods (podTemplateOverrides is gone from its CRD)
    patch = {
        "manager": "trainyard.test/e2e",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"metadata": {"annotations": annotations}}}}}
                    ]
                }
            }
        },
    }
    return build_trainjob(
        name,
        namespace,
        runtime=runtime,
        nodes=nodes,
        requests=requests,
        limits=requests,
        labels=dict(extra_labels or {}),
        runtimePatches=[patch],
    )
