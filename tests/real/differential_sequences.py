"""The request sequences the differential test sends to the embedded and to the real API server.

Each exercises one thing trainyard relies on: reads and writes with conflicts, the three patch
types, server-side apply, the status subresource, lists with paging and selectors, watches from
a resourceVersion and from an expired one, CRD pruning and defaulting, admission webhooks'
refusals, and garbage collection.
"""

from __future__ import annotations

from typing import Any

from differential import COMPACT, Sequence, Step

CM = "/api/v1/namespaces/{ns}/configmaps"
EV = "/api/v1/namespaces/{ns}/events"
WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads"
CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _configmap(name: str, data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, object]:
    metadata: dict[str, object] = {"name": name, "namespace": "{ns}"}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def _workload(name: str, queue: str = "default", owners: list[dict[str, object]] | None = None) -> dict[str, Any]:
    metadata: dict[str, object] = {"name": name, "namespace": "{ns}"}
    if owners:
        metadata["ownerReferences"] = owners
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": metadata,
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 2,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                        }
                    },
                }
            ],
        },
        "status": {"conditions": [{"type": "Finished", "status": "True", "reason": "Made", "message": "up"}]},
    }


CRUD = Sequence(
    "crud",
    (
        Step("create", "POST", CM, _configmap("one", {"a": "1"})),
        Step("create-again", "POST", CM, _configmap("one", {"a": "1"})),
        Step("get", "GET", f"{CM}/one"),
        Step(
            "update-stale",
            "PUT",
            f"{CM}/one",
            {**_configmap("one", {"a": "2"}), "metadata": {"name": "one", "resourceVersion": "1"}},
        ),
        Step(
            "update",
            "PUT",
            f"{CM}/one",
            {**_configmap("one", {"a": "2"}), "metadata": {"name": "one", "resourceVersion": "{rv:get}"}},
        ),
        Step("merge-patch", "PATCH", f"{CM}/one", {"data": {"b": "3"}}, MERGE),
        Step("json-patch", "PATCH", f"{CM}/one", [{"op": "replace", "path": "/data/a", "value": "4"}], JSON_PATCH),
        Step(
            "json-patch-test-fails", "PATCH", f"{CM}/one", [{"op": "test", "path": "/data/a", "value": "x"}], JSON_PATCH
        ),
        Step("strategic-patch", "PATCH", f"{CM}/one", {"data": {"c": "5"}}, STRATEGIC),
        Step("delete", "DELETE", f"{CM}/one"),
        Step("get-gone", "GET", f"{CM}/one"),
        Step("missing-namespace", "POST", "/api/v1/namespaces/no-such-ns/configmaps", _configmap("x", {})),
    ),
)

SERVER_SIDE_APPLY = Sequence(
    "server-side-apply",
    (
        Step("apply-create", "PATCH", f"{CM}/applied?fieldManager=alice", _configmap("applied", {"a": "1"}), APPLY),
        Step("apply-update", "PATCH", f"{CM}/applied?fieldManager=alice", _configmap("applied", {"a": "2"}), APPLY),
        Step("apply-conflict", "PATCH", f"{CM}/applied?fieldManager=bob", _configmap("applied", {"a": "3"}), APPLY),
        Step(
            "apply-force",
            "PATCH",
            f"{CM}/applied?fieldManager=bob&force=true",
            _configmap("applied", {"a": "3"}),
            APPLY,
        ),
        Step("apply-no-manager", "PATCH", f"{CM}/applied", _configmap("applied", {"a": "4"}), APPLY),
    ),
)

STATUS = Sequence(
    "status-subresource",
    (
        Step("create-with-status", "POST", WL, _workload("w1")),
        Step("put-status", "PUT", f"{WL}/w1/status", {**_workload("w1"), "metadata": {"name": "w1"}}),
        Step("merge-status", "PATCH", f"{WL}/w1/status", {"status": {"conditions": []}}, MERGE),
        Step(
            "spec-change-ignores-status",
            "PATCH",
            f"{WL}/w1",
            {"status": {"admission": None}, "spec": {"priority": 5}},
            MERGE,
        ),
        Step("get", "GET", f"{WL}/w1"),
    ),
)

LISTS = Sequence(
    "lists",
    (
        Step("list-all", "GET", f"{CM}?labelSelector=team"),
        Step("page-1", "GET", f"{CM}?labelSelector=team&limit=2"),
        Step("label-in", "GET", f"{CM}?labelSelector=team+in+(a,b)"),
        # kube-controller-manager publishes kube-root-ca.crt in every namespace of the real cluster: left out
        Step("label-not", "GET", f"{CM}?labelSelector=team!%3Da&fieldSelector=metadata.name!%3Dkube-root-ca.crt"),
        Step("field-name", "GET", f"{CM}?fieldSelector=metadata.name%3Dcm-2"),
        Step("field-unsupported", "GET", f"{CM}?fieldSelector=data.x%3D1"),
        Step("bad-selector", "GET", f"{CM}?labelSelector=team+in+a"),
    ),
    setup=tuple(
        Step(f"seed-{i}", "POST", CM, _configmap(f"cm-{i}", {"i": str(i)}, {"team": "ab"[i % 2]})) for i in range(5)
    ),
)

WATCHES = Sequence(
    "watches",
    (
        Step("create-b", "POST", CM, _configmap("watched-b", {"x": "1"})),
        Step("update-a", "PATCH", f"{CM}/watched-a", {"data": {"x": "2"}}, MERGE),
        Step("watch-from-rv", "GET", f"{CM}?watch=true&resourceVersion={{rv:create-a}}", watch_events=2),
        Step("compact", COMPACT, ""),
        # Events: kube-apiserver keeps no watch cache of them, so a watch or a paged list reads etcd,
        # whose compaction expires them at once (a cached kind expires once the cache's window moves on)
        Step("watch-expired", "GET", f"{EV}?watch=true&resourceVersion={{rv:event}}", watch_events=1),
        Step(
            "list-expired-continue",
            "GET",
            f"{EV}?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0",
        ),
    ),
    setup=(
        Step("create-a", "POST", CM, _configmap("watched-a", {"x": "0"})),
        Step(
            "event",
            "POST",
            EV,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "seen"},
                "involvedObject": {"kind": "ConfigMap", "name": "watched-a", "namespace": "{ns}"},
                "reason": "Made",
                "message": "made",
                "type": "Normal",
            },
        ),
    ),
)

CRD_SCHEMA = Sequence(
    "crd-pruning-and-defaulting",
    (
        Step(
            "create-unknown-field",
            "POST",
            CQ,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "{ns}-cq"},
                "spec": {"resourceGroups": [], "madeUpField": 1},
            },
        ),
        Step("get", "GET", f"{CQ}/{{ns}}-cq"),
        Step(
            "create-invalid",
            "POST",
            CQ,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "{ns}-bad"},
                "spec": {"queueingStrategy": "Sideways"},
            },
        ),
        Step("delete", "DELETE", f"{CQ}/{{ns}}-cq"),
    ),
)

GARBAGE_COLLECTION = Sequence(
    "garbage-collection",
    (
        Step(
            "dependent",
            "POST",
            CM,
            {
                **_configmap("dependent", {}),
                "metadata": {
                    "name": "dependent",
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "{uid:owner}"}
                    ],
                },
            },
        ),
        Step("delete-owner", "DELETE", f"{CM}/owner"),
        Step("dependent-collected", "GET", f"{CM}/dependent", pause=5.0),
    ),
    setup=(Step("owner", "POST", CM, _configmap("owner", {})),),
)

SEQUENCES = (CRUD, SERVER_SIDE_APPLY, STATUS, LISTS, WATCHES, CRD_SCHEMA, GARBAGE_COLLECTION)


TJ = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs"
LQ = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues"
RF = "/apis/kueue.x-k8s.io/v1beta2/resourceflavors"


def _trainjob(name: str, nodes: int, gpus: int) -> dict[str, Any]:
    requests = {"cpu": "1", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "{ns}"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": nodes, "resourcesPerNode": {"requests": requests, "limits": dict(requests)}},
        },
    }


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
        Step("defaults", "POST", WL, _workload("defaulted")),
        Step(
            "too-many-pod-sets",
            "POST",
            WL,
            {
                **_workload("many"),
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
                **_workload("unnamed"),
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
            _workload("owned", queue="none", owners=[_owned_by("TrainJob", "owner", "{uid:trainjob}")]),
        ),
        Step("delete-trainjob", "DELETE", f"{TJ}/owner"),
        Step("workload-collected", "GET", f"{WL}/owned", pause=5.0),
    ),
    setup=_queues(gpus=8),
)

SEQUENCES = (
    *SEQUENCES,
    WORKLOAD_SCHEMA,
    ADMISSION_WEBHOOKS,
    TRAINJOB_GARBAGE_COLLECTION,
)

# What the embedded server knowingly does otherwise (test_differential.KNOWN says why each does not matter)
GAPS = Sequence(
    "known-gaps",
    (
        Step("configmap-unknown-field", "POST", CM, {**_configmap("extra", {"a": "1"}), "madeUp": {"x": 1}}),
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

SEQUENCES = (*SEQUENCES, GAPS)

SA = "/api/v1/namespaces/{ns}/serviceaccounts"
DELETES = Sequence(
    "deletes",
    (
        Step("kept-by-finalizer", "DELETE", f"{CM}/held"),
        Step("deleted-again", "DELETE", f"{CM}/held"),
        Step("finalizer-cleared", "PATCH", f"{CM}/held", {"metadata": {"finalizers": None}}, MERGE),
        Step("orphan", "DELETE", f"{CM}/orphaned", {"propagationPolicy": "Orphan"}),
        Step("foreground", "DELETE", f"{CM}/foreground", {"propagationPolicy": "Foreground"}),
        Step("service-account", "DELETE", f"{SA}/robot"),
        Step("custom-resource-kept", "DELETE", f"{RF}/{{ns}}-held"),
        Step("missing", "DELETE", f"{CM}/never-made"),
    ),
    setup=(
        Step(
            "held",
            "POST",
            CM,
            {**_configmap("held", {"a": "1"}), "metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
        ),
        Step("orphaned", "POST", CM, _configmap("orphaned", {"a": "1"})),
        Step("foreground", "POST", CM, _configmap("foreground", {"a": "1"})),
        Step("robot", "POST", SA, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        # a kind no controller of either side writes (trainyard's queue controller would write a
        # Workload's status on the real side only, where it runs)
        Step(
            "held-flavor",
            "POST",
            RF,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "{ns}-held", "finalizers": ["example.com/hold"]},
            },
        ),
    ),
)

SEQUENCES = (*SEQUENCES, DELETES)
