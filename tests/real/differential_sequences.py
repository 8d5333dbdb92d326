"""The request sequences the differential test sends to the embedded and to the real API server.

The API machinery's sequences are in ``differential_api_sequences``; here are the ones about
trainyard's own objects: the Workload CRD's schema, trainyard's admission webhooks on TrainJobs,
a TrainJob's garbage collection, and what the embedded server knowingly does otherwise (``GAPS``).
``SEQUENCES`` is all of them, in the order the test runs them.
"""

from __future__ import annotations

from typing import Any

from differential import Sequence, Step
from differential_api_sequences import API_SEQUENCES, CM, CQ, DELETES, RF, WL, configmap, workload

from tests.builders import trainjob

TJ = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs"
LQ = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues"


def _trainjob(name: str, nodes: int, gpus: int) -> dict[str, Any]:
    requests = {"cpu": "1", "nvidia.com/gpu": str(gpus)}
    return trainjob(name, "{ns}", nodes=nodes, requests=requests, limits=requests)


def _owned_by(kind: str, name: str, uid: str) -> dict[str, object]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _queues(gpus: int) -> tuple[Step, ...]:
    """A flavor and a ClusterQueue of their own, and the namespace's ``default`` LocalQueue (the one
    trainyard's mutating webhook fills a TrainJob's queue from); then time for the webhook's informers."""
    quota = [{"name": "cpu", "nominalQuota": 100}, {"name": "nvidia.com/gpu", "nominalQuota": gpus}]
    return (
        Step(
            "flavor",
            "POST",
            RF,
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "{ns}-flavor"}},
        ),
        Step(
            "cluster-queue",
            "POST",
            CQ,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "{ns}-cq"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "nvidia.com/gpu"],
                            "flavors": [{"name": "{ns}-flavor", "resources": quota}],
                        }
                    ],
                },
            },
        ),
        Step(
            "local-queue",
            "POST",
            LQ,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "default", "namespace": "{ns}"},
                "spec": {"clusterQueue": "{ns}-cq"},
            },
        ),
        Step("informers", "GET", f"{LQ}/default", pause=3.0),
    )


WORKLOAD_SCHEMA = Sequence(
    "workload-schema",
    (
        Step("defaults", "POST", WL, workload("defaulted")),
        Step(
            "too-many-pod-sets",
            "POST",
            WL,
            {
                **workload("many"),
                "spec": {
                    "queueName": "default",
                    "podSets": [
                        {"name": f"ps{i}", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}
                        for i in range(9)
                    ],
                },
            },
        ),
        Step(
            "class-without-name",
            "POST",
            WL,
            {
                **workload("unnamed"),
                "spec": {
                    "queueName": "default",
                    "priority": 1,
                    "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass"},
                    "podSets": [{"name": "main", "template": {"spec": {"containers": [{"name": "c"}]}}}],
                },
            },
        ),
        Step(
            "local-queue-defaults",
            "POST",
            LQ,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": "{ns}"},
                "spec": {"clusterQueue": "somewhere", "fairSharing": {}},
            },
        ),
    ),
)

ADMISSION_WEBHOOKS = Sequence(
    "admission-webhooks",
    (
        Step("fits", "POST", TJ, _trainjob("fits", nodes=1, gpus=4)),
        Step("never-fits", "POST", TJ, _trainjob("never-fits", nodes=2, gpus=8)),
        Step(
            "no-such-runtime",
            "POST",
            TJ,
            {**_trainjob("lost", nodes=1, gpus=1), "spec": {"runtimeRef": {"name": "no-such-runtime"}}},
        ),
    ),
    setup=_queues(gpus=8),
)

TRAINJOB_GARBAGE_COLLECTION = Sequence(
    "trainjob-garbage-collection",
    (
        Step("trainjob", "POST", TJ, _trainjob("owner", nodes=1, gpus=1)),
        Step(
            "owned-workload",
            "POST",
            WL,
            # a queue no controller admits from: only the garbage collector acts on it
            workload("owned", queue="none", owners=[_owned_by("TrainJob", "owner", "{uid:trainjob}")]),
        ),
        Step("delete-trainjob", "DELETE", f"{TJ}/owner"),
        Step("workload-collected", "GET", f"{WL}/owned", pause=5.0),
    ),
    setup=_queues(gpus=8),
)

# What the embedded server knowingly does otherwise (test_differential.KNOWN says why each does not matter)
GAPS = Sequence(
    "known-gaps",
    (
        Step("configmap-unknown-field", "POST", CM, {**configmap("extra", {"a": "1"}), "madeUp": {"x": 1}}),
        Step(
            "cel-rule",
            "POST",
            CQ,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "{ns}-cel"},
                "spec": {
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1, "borrowingLimit": 1}]}
                            ],
                        }
                    ]
                },
            },
        ),
        Step(
            "pod-template-overrides",
            "POST",
            TJ,
            {
                **_trainjob("overridden", nodes=1, gpus=1),
                "spec": {
                    **_trainjob("overridden", nodes=1, gpus=1)["spec"],
                    "podTemplateOverrides": [{"targetJobs": [{"name": "node"}], "metadata": {"labels": {"a": "b"}}}],
                },
            },
        ),
    ),
    setup=_queues(gpus=8),
)

SEQUENCES = (*API_SEQUENCES, WORKLOAD_SCHEMA, ADMISSION_WEBHOOKS, TRAINJOB_GARBAGE_COLLECTION, GAPS, DELETES)
