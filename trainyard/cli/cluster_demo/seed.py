"""The small GPU cluster `trainyard cluster-demo` seeds, and the TrainJobs it submits.

Four H100 hosts of 8 GPUs in two network blocks (a Topology of block and hostname levels, one
TAS ResourceFlavor), two teams whose ClusterQueues of 16 GPUs share the cohort ``research`` and
preempt lower priorities, and WorkloadPriorityClasses ``low`` and ``high``. The whole fabric
is 32 GPUs: exactly the two teams' nominal quotas, so a third gang has to wait or preempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.api.topology_assignment import HOSTNAME_LABEL

KUEUE = "kueue.x-k8s.io/v1beta2"
TRAINER = "trainer.kubeflow.org/v1alpha1"
BLOCK_LABEL = "network.topology.nvidia.com/block"
GPU = "nvidia.com/gpu"
GPUS_PER_NODE = 8
COHORT = "research"
TEAMS = ("team-a", "team-b")
LOCAL_QUEUE = "default"
PRIORITIES = {"low": 10, "high": 1000}
# Read by the sandbox's pod runner: how long a pod runs before it succeeds.
RUN_SECONDS_ANNOTATION = "trainyard.io/sandbox-run-seconds"
REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"


@dataclass(frozen=True)
class TourJob:
    """One TrainJob of the tour: a gang of ``nodes`` pods, each taking a whole 8-GPU host."""

    name: str
    team: str
    nodes: int
    priority: str | None
    run_seconds: float

    @property
    def key(self) -> str:
        return f"{self.team}/{self.name}"


def node(name: str, block: str) -> dict[str, Any]:
    resources = {"cpu": "96", "memory": "1Ti", GPU: str(GPUS_PER_NODE), "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {HOSTNAME_LABEL: name, BLOCK_LABEL: block, "nvidia.com/gpu.product": "H100"},
        },
        "status": {
            "allocatable": dict(resources),
            "capacity": dict(resources),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def cluster_queue(team: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": team},
        "spec": {
            "cohortName": COHORT,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}},
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", GPU],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": str(gpus * 8)},
                                {"name": GPU, "nominalQuota": str(gpus)},
                            ],
                        }
                    ],
                }
            ],
        },
    }


def cluster_objects() -> list[dict[str, Any]]:
    """Everything the API server starts with: namespaces, runtime, topology, nodes, queues."""
    from sandbox.embedded import builtin_runtime  # it brings the Kubernetes client: not at import

    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": team, "labels": {"kubernetes.io/metadata.name": team}},
        }
        for team in TEAMS
    ]
    objects.append(builtin_runtime())
    objects.append(
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": "gpu-fabric"},
            "spec": {"levels": [{"nodeLabel": BLOCK_LABEL}, {"nodeLabel": HOSTNAME_LABEL}]},
        }
    )
    objects.append(
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "h100"},
            "spec": {"nodeLabels": {"nvidia.com/gpu.product": "H100"}, "topologyName": "gpu-fabric"},
        }
    )
    objects.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": COHORT}})
    for team in TEAMS:
        objects.append(cluster_queue(team, 2 * GPUS_PER_NODE))
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": LOCAL_QUEUE, "namespace": team},
                "spec": {"clusterQueue": team},
            }
        )
    for name, value in PRIORITIES.items():
        objects.append(
            {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}
        )
    for block in range(2):
        for host in range(2):
            objects.append(node(f"gpu-b{block}-h{host}", f"block-{block}"))
    return objects


def trainjob(job: TourJob) -> dict[str, Any]:
    """The TrainJob as a user submits it: queued, suspended, one whole host per node, kept in one block."""
    labels = {"kueue.x-k8s.io/queue-name": LOCAL_QUEUE}
    if job.priority is not None:
        labels["kueue.x-k8s.io/priority-class"] = job.priority
    per_node = {"cpu": "8", GPU: str(GPUS_PER_NODE)}
    return {
        "apiVersion": TRAINER,
        "kind": "TrainJob",
        "metadata": {"name": job.name, "namespace": job.team, "labels": labels},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "suspend": True,
            "trainer": {
                "numNodes": job.nodes,
                "resourcesPerNode": {"requests": dict(per_node), "limits": {GPU: str(GPUS_PER_NODE)}},
            },
            "podTemplateOverrides": [
                {
                    "targetJobs": [{"name": "node"}],
                    "metadata": {
                        "annotations": {
                            REQUIRED_TOPOLOGY_ANNOTATION: BLOCK_LABEL,
                            RUN_SECONDS_ANNOTATION: f"{job.run_seconds:g}",
                        }
                    },
                }
            ],
        },
    }
