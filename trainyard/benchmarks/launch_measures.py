"""What the controller benchmarks submit and how they read the answer: one namespace with a
ClusterQueue and its LocalQueue, suspended TrainJobs, latency percentiles and writes per job.

Shared by ``bench controller`` (embedded and ``--real``) and ``bench chaos``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

NAMESPACE = "bench"
KUEUE = "kueue.x-k8s.io/v1beta2"
RUNTIMES = {"torch_distributed": "torch-distributed", "deepspeed_distributed": "deepspeed-distributed"}


def queue_objects(
    namespace: str, *, cpu: int, cluster_queue: str = "bench", runtime: str = "torch_distributed"
) -> list[dict[str, Any]]:
    """A namespace, a bundled runtime, one flavor, one ClusterQueue of ``cpu`` CPUs and its LocalQueue."""
    from sandbox.embedded import builtin_runtime

    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        builtin_runtime(runtime),
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        },
    ]


def trainjob(
    name: str, namespace: str, *, nodes: int = 1, cpu: int = 1, runtime: str = "torch-distributed"
) -> dict[str, Any]:
    """A suspended TrainJob of ClusterTrainingRuntime ``runtime`` in LocalQueue ``lq``, as the mutating webhook leaves it."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "runtimeRef": {"name": runtime},
            "trainer": {"numNodes": nodes, "resourcesPerNode": {"requests": {"cpu": str(cpu)}}},
            "suspend": True,
        },
    }


def owner_name(document: dict[str, Any]) -> str | None:
    for reference in (document.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return str(reference.get("name"))
    return None


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def per_job_writes(writes: Counter[str], jobs: int) -> dict[str, Any]:
    """Object, status and Event writes per job, and the object and status writes per verb and resource."""

    def by_kind(kind: str) -> dict[str, float]:
        prefix = f"{kind}:"
        return {
            key.removeprefix(prefix): round(count / jobs, 2)
            for key, count in sorted(writes.items())
            if key.startswith(prefix) and count > 0
        }

    return {
        "writes_per_job": round(writes["object"] / jobs, 2),
        "object_writes_by_kind": by_kind("object"),
        "status_writes_per_job": round(writes["status"] / jobs, 2),
        "status_writes_by_kind": by_kind("status"),
        "event_writes_per_job": round(writes["event"] / jobs, 2),
    }
