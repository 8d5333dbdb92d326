"""The request sequences of the differential test that exercise the API machinery trainyard relies on.

Reads and writes with conflicts, the three patch types, server-side apply, the status subresource,
lists with paging and selectors, watches from a resourceVersion and from an expired one, CRD
pruning and defaulting, deletes (finalizers, propagation) and garbage collection. The sequences
about trainyard's own objects and webhooks are in ``differential_sequences``.
"""

from __future__ import annotations

from typing import Any

from differential import COMPACT, Sequence, Step

CM = "/api/v1/namespaces/{ns}/configmaps"
EV = "/api/v1/namespaces/{ns}/events"
WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads"
CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
RF = "/apis/kueue.x-k8s.io/v1beta2/resourceflavors"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def configmap(name: str, data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, object]:
    metadata: dict[str, object] = {"name": name, "namespace": "{ns}"}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def workload(name: str, queue: str = "default", owners: list[dict[str, object]] | None = None) -> dict[str, Any]:
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
        Step("create", "POST", CM, configmap("one", {"a": "1"})),
        Step("create-again", "POST", CM, configmap("one", {"a": "1"})),
        Step("get", "GET", f"{CM}/one"),
        Step(
            "update-stale",
            "PUT",
            f"{CM}/one",
            {**configmap("one", {"a": "2"}), "metadata": {"name": "one", "resourceVersion": "1"}},
        ),
        Step(
            "update",
            "PUT",
            f"{CM}/one",
            {**configmap("one", {"a": "2"}), "metadata": {"name": "one", "resourceVersion": "{rv:get}"}},
        ),
        Step("merge-patch", "PATCH", f"{CM}/one", {"data": {"b": "3"}}, MERGE),
        Step("json-patch", "PATCH", f"{CM}/one", [{"op": "replace", "path": "/data/a", "value": "4"}], JSON_PATCH),
        Step(
            "json-patch-test-fails", "PATCH", f"{CM}/one", [{"op": "test", "path": "/data/a", "value": "x"}], JSON_PATCH
        ),
        Step("strategic-patch", "PATCH", f"{CM}/one", {"data": {"c": "5"}}, STRATEGIC),
        Step("delete", "DELETE", f"{CM}/one"),
        Step("get-gone", "GET", f"{CM}/one"),
        Step("missing-namespace", "POST", "/api/v1/namespaces/no-such-ns/configmaps", configmap("x", {})),
    ),
)

SERVER_SIDE_APPLY = Sequence(
    "server-side-apply",
    (
        Step("apply-create", "PATCH", f"{CM}/applied?fieldManager=alice", configmap("applied", {"a": "1"}), APPLY),
        Step("apply-update", "PATCH", f"{CM}/applied?fieldManager=alice", configmap("applied", {"a": "2"}), APPLY),
        Step("apply-conflict", "PATCH", f"{CM}/applied?fieldManager=bob", configmap("applied", {"a": "3"}), APPLY),
        Step(
            "apply-force",
            "PATCH",
            f"{CM}/applied?fieldManager=bob&force=true",
            configmap("applied", {"a": "3"}),
            APPLY,
        ),
        Step("apply-no-manager", "PATCH", f"{CM}/applied", configmap("applied", {"a": "4"}), APPLY),
    ),
)

STATUS = Sequence(
    "status-subresource",
    (
        Step("create-with-status", "POST", WL, workload("w1")),
        Step("put-status", "PUT", f"{WL}/w1/status", {**workload("w1"), "metadata": {"name": "w1"}}),
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
        Step(f"seed-{i}", "POST", CM, configmap(f"cm-{i}", {"i": str(i)}, {"team": "ab"[i % 2]})) for i in range(5)
    ),
)

WATCHES = Sequence(
    "watches",
    (
        Step("create-b", "POST", CM, configmap("watched-b", {"x": "1"})),
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
        Step("create-a", "POST", CM, configmap("watched-a", {"x": "0"})),
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
                **configmap("dependent", {}),
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
    setup=(Step("owner", "POST", CM, configmap("owner", {})),),
)

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
            {**configmap("held", {"a": "1"}), "metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
        ),
        Step("orphaned", "POST", CM, configmap("orphaned", {"a": "1"})),
        Step("foreground", "POST", CM, configmap("foreground", {"a": "1"})),
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

API_SEQUENCES = (CRUD, SERVER_SIDE_APPLY, STATUS, LISTS, WATCHES, CRD_SCHEMA, GARBAGE_COLLECTION)
