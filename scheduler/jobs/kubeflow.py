"""Kubeflow Training Operator jobs (kubeflow.org/v1 PyTorchJob, TFJob, PaddleJob, XGBoostJob,
JAXJob; kubeflow.org/v2beta1 MPIJob), as Kueue's ``kubeflow.org/*`` integrations make their Workloads.

One pod set per replica type, in the order Kueue lists them for the kind (master/launcher
first), named the replica type lower-cased, count = its ``replicas`` (default 1), template = its
pod template. A TAS request tells pods apart by ``training.kubeflow.org/replica-index``.
"""

from __future__ import annotations

from typing import Any

from runtimes.errors import FieldError
from scheduler.api.kueue import Workload
from scheduler.jobs.common import (
    JobDocument,
    JobError,
    build_workload,
    pod_set,
    pod_template,
    replica_count,
    topology_request,
)

REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"

# kind -> (the spec field holding the replica specs, replica types in Kueue's pod set order)
REPLICA_SPECS: dict[str, tuple[str, tuple[str, ...]]] = {
    "PyTorchJob": ("pytorchReplicaSpecs", ("Master", "Worker")),
    "TFJob": ("tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator")),
    "PaddleJob": ("paddleReplicaSpecs", ("Master", "Worker")),
    "XGBoostJob": ("xgbReplicaSpecs", ("Master", "Worker")),
    "JAXJob": ("jaxReplicaSpecs", ("Worker",)),
    "MPIJob": ("mpiReplicaSpecs", ("Launcher", "Worker")),
}


def derive(job: JobDocument) -> Workload:
    field, order = REPLICA_SPECS[job.kind]
    specs = job.spec.get(field)
    if not isinstance(specs, dict) or not specs:
        raise JobError([FieldError(f"spec.{field}", f"must map replica types ({', '.join(order)}) to replica specs")])
    unknown = sorted(set(specs) - set(order))
    if unknown:
        raise JobError(
            [FieldError(f"spec.{field}.{unknown[0]}", f"is not a {job.kind} replica type; use {', '.join(order)}")]
        )
    pod_sets: list[dict[str, Any]] = []
    for replica_type in order:
        replica = specs.get(replica_type)
        if replica is None:
            continue
        path = f"spec.{field}.{replica_type}"
        if not isinstance(replica, dict):
            raise JobError([FieldError(path, "must be a replica spec (replicas, template)")])
        template = pod_template(replica.get("template"), f"{path}.template")
        count = replica_count(replica.get("replicas"), f"{path}.replicas")
        request = topology_request(template, REPLICA_INDEX_LABEL)
        pod_sets.append(pod_set(replica_type.lower(), template, count, request))
    return build_workload(job, pod_sets)
