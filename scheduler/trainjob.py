"""A TrainJob as Kueue sees it: the Workload whose pod sets come from the rendered JobSet.

Kueue's TrainJob integration renders the child JobSet from the (Cluster)TrainingRuntime and
reuses the JobSet's pod sets; trainyard does the same through ``runtimes.render`` so the engine
queues exactly what will run. The Workload is named as Kueue's jobframework names a job's
Workload, so Kueue's tools (and a later switch to Kueue itself) find the same object.
"""

from __future__ import annotations

import hashlib

from runtimes.api.trainer import TRAINER_API_VERSION, TRAINER_GROUP, AnyTrainingRuntime, TrainJob
from runtimes.podsets import workload_pod_sets
from runtimes.render import render_trainjob
from scheduler.api.kueue import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL, PriorityClassRef, Workload

TRAINJOB_KIND = "TrainJob"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
# Kueue (pkg/controller/jobframework/workload_names.go): 253 is a CRD name's limit, less one
# for the '-' and the hash.
_HASH_LENGTH = 5
_MAX_PREFIX_LENGTH = 252 - _HASH_LENGTH


def workload_name_for_owner(owner_name: str, owner_uid: str, kind: str, group: str) -> str:
    """Kueue's ``GetWorkloadNameForOwnerWithGVK``: ``<kind lower-cased>-<owner name>`` cut to
    fit, then ``-`` and the first 5 hex digits of sha1(kind, group, name, uid joined by newlines)."""
    prefix = f"{kind.lower()}-{owner_name}"[:_MAX_PREFIX_LENGTH]
    digest = hashlib.sha1("\n".join((kind, group, owner_name, owner_uid)).encode(), usedforsecurity=False)
    return f"{prefix}-{digest.hexdigest()[:_HASH_LENGTH]}"


def workload_name(trainjob: TrainJob) -> str:
    return workload_name_for_owner(trainjob.metadata.name, trainjob.metadata.uid or "", TRAINJOB_KIND, TRAINER_GROUP)


def owner_reference(trainjob: TrainJob) -> dict[str, object]:
    """The Workload's controller reference to its TrainJob (garbage-collected with it)."""
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": TRAINJOB_KIND,
        "name": trainjob.metadata.name,
        "uid": trainjob.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


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
    metadata: dict[str, object] = {
        "name": workload_name(trainjob),
        "namespace": trainjob.metadata.namespace or "default",
        "labels": {JOB_UID_LABEL: trainjob.metadata.uid or ""},
        "creationTimestamp": trainjob.metadata.creation_timestamp,
    }
    if trainjob.metadata.uid:
        metadata["ownerReferences"] = [owner_reference(trainjob)]
    workload = Workload.model_validate({"metadata": metadata, "spec": spec})
    priority_class = labels.get(PRIORITY_CLASS_LABEL)
    if priority_class:
        workload.spec.priority_class_ref = PriorityClassRef.workload_priority_class(priority_class)
    return workload
