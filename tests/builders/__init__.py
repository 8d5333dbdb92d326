"""Test objects, one module per API group: ``kueue`` (fluent builders in the shape of Kueue's
wrappers), ``trainer`` (TrainJobs, runtimes), ``jobset``, ``core`` (Nodes, Namespaces).

Tests import from the package: ``from tests.builders import ClusterQueueBuilder, trainjob``.
"""

from __future__ import annotations

from .core import HOSTNAME, NodeBuilder, namespace, node, resource_name
from .jobset import JOBSET_API, jobset, replicated_job
from .kueue import (
    API_VERSION,
    EPOCH,
    ClusterQueueBuilder,
    CohortBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    TopologyBuilder,
    WorkloadBuilder,
    flavor,
    local_queue,
    priority_class,
    timestamp,
)
from .trainer import (
    KWOK_DELAY_ANNOTATION,
    KWOK_JITTER_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    TRAINER_API,
    cluster_training_runtime,
    kwok_trainjob,
    training_runtime,
    trainjob,
)

__all__ = [
    "API_VERSION",
    "EPOCH",
    "HOSTNAME",
    "JOBSET_API",
    "KWOK_DELAY_ANNOTATION",
    "KWOK_JITTER_ANNOTATION",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_LABEL",
    "TRAINER_API",
    "ClusterQueueBuilder",
    "CohortBuilder",
    "LocalQueueBuilder",
    "NodeBuilder",
    "ResourceFlavorBuilder",
    "TopologyBuilder",
    "WorkloadBuilder",
    "cluster_training_runtime",
    "flavor",
    "jobset",
    "kwok_trainjob",
    "local_queue",
    "namespace",
    "node",
    "priority_class",
    "replicated_job",
    "resource_name",
    "timestamp",
    "training_runtime",
    "trainjob",
]
