"""A TrainJob as Kueue sees it: the Workload whose pod sets come from the rendered JobSet.

Kueue's TrainJob integration renders the child JobSet from the (Cluster)TrainingRuntime and
reuses the JobSet's pod sets; trainyard does the same through ``runtimes.render`` so the engine
queues exactly what will run.
"""

from __future__ import annotations

from runtimes.api.trainer import AnyTrainingRuntime, TrainJob
from runtimes.podsets import workload_pod_sets
from runtimes.render import render_trainjob
from scheduler.api.kueue import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL, PriorityClassRef, Workload

TRAINJOB_WORKLOAD_PREFIX = "trainjob-"


def workload_name(trainjob: TrainJob) -> str:
    return f"{TRAINJOB_WORKLOAD_PREFIX}{trainjob.metadata.name}"


def workload_for_trainjob(trainjob: TrainJob, runtime: AnyTrainingRuntime) -> Workload:
    """The Workload of ``trainjob``: queue from its queue-name label, pod sets from its JobSet.

    Raises ``runtimes.errors.RenderError`` when the TrainJob cannot be rendered with ``runtime``.
    """
    # Only the pod sets are read: no SSH key pair for an MPI job, no Secret.
    rendered = render_trainjob(trainjob, runtime, key_material=False)
    labels = trainjob.metadata.labels
    spec: dict[str, object] = {"podSets": workload_pod_sets(rendered)}
    queue = labels.get(QUEUE_NAME_LABEL)
    if queue:
        spec["queueName"] = queue
    workload = Workload.model_validate(
        {
            "metadata": {
                "name": workload_name(trainjob),
                "namespace": trainjob.metadata.namespace or "default",
                "labels": {"kueue.x-k8s.io/job-uid": trainjob.metadata.uid or ""},
                "creationTimestamp": trainjob.metadata.creation_timestamp,
            },
            "spec": spec,
        }
    )
    priority_class = labels.get(PRIORITY_CLASS_LABEL)
    if priority_class:
        workload.spec.priority_class_ref = PriorityClassRef(name=priority_class)
    return workload
