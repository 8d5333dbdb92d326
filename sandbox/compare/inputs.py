"""A scenario's jobs as the sandbox sees them: one TrainJob per ``JobSpec``.

The embedded simulator hands the engine a Workload built from each ``JobSpec``
(``simulations.engine_driver.workload_document``). Through the service the same job is a
TrainJob: the controllers render it with the runtime and derive the Workload from the rendered
JobSet, so the TrainJob is written to render to the very same pod set (``numNodes`` pods with
the job's requests, its topology annotation and GPU-model affinity on the pod template, its
priority class label) in the team's namespace and LocalQueue.
"""

from __future__ import annotations

from typing import Any

from scheduler.api.kueue import (
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from simulations.cluster_spec import GPU_PRODUCT_LABEL, GPU_RESOURCE, LOCAL_QUEUE_NAME
from simulations.kwok import POD_COMPLETE_DELAY_ANNOTATION, POD_COMPLETE_JITTER_ANNOTATION
from simulations.workloads import JobSpec

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
TRAINER_JOB = "node"  # the torch-distributed runtime's replicated job
# The stand-in kubelet ends a pod after this many seconds; the comparison's driver ends pods
# itself at their virtual completion time, so the stand-in must never do it first.
RUN_SECONDS_ANNOTATION = "trainyard.io/sandbox-run-seconds"
NEVER_SECONDS = str(10**9)


def trainjob_document(job: JobSpec, runtime_name: str = "torch-distributed") -> dict[str, Any]:
    """The TrainJob of ``job``, as the mutating webhook leaves it (suspended, queue label set)."""
    requests: dict[str, str] = {"cpu": f"{job.cpu_milli}m", "memory": f"{job.memory_mib}Mi"}
    if job.gpus_per_node:
        requests[GPU_RESOURCE] = str(job.gpus_per_node)
    delay = f"{round(job.duration * 1000)}ms"
    annotations = {
        POD_COMPLETE_DELAY_ANNOTATION: delay,
        POD_COMPLETE_JITTER_ANNOTATION: delay,
        RUN_SECONDS_ANNOTATION: NEVER_SECONDS,
    }
    if job.topology_mode and job.topology_level:
        key = PODSET_REQUIRED_TOPOLOGY if job.topology_mode == "required" else PODSET_PREFERRED_TOPOLOGY
        annotations[key] = job.topology_level
    override: dict[str, Any] = {"targetJobs": [{"name": TRAINER_JOB}], "metadata": {"annotations": annotations}}
    if job.gpu_models:
        override["spec"] = {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": GPU_PRODUCT_LABEL, "operator": "In", "values": list(job.gpu_models)}
                                ]
                            }
                        ]
                    }
                }
            }
        }
    labels = {QUEUE_NAME_LABEL: LOCAL_QUEUE_NAME}
    if job.priority_class:
        labels[PRIORITY_CLASS_LABEL] = job.priority_class
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainJob",
        "metadata": {"name": job.name, "namespace": job.team, "labels": labels},
        "spec": {
            "runtimeRef": {"name": runtime_name},
            "trainer": {
                "numNodes": job.nodes,
                "resourcesPerNode": {"requests": requests, "limits": dict(requests)},
            },
            "podTemplateOverrides": [override],
            "suspend": True,
        },
    }
