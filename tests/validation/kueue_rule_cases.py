"""One object per Kueue rule the webhook enforces (beyond the basics in test_webhook_cli_parity).

Each entry breaks exactly one rule of ``scheduler.api.validation`` / ``quota_validation`` /
``field_rules`` / ``admission_check_rules``; ``test_rule_coverage`` checks that together with
the parity table they reach every rule.
"""

from __future__ import annotations

import copy
from typing import Any

KUEUE = "kueue.x-k8s.io/v1beta2"


def _object(kind: str, spec: dict[str, Any], name: str = "x", namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": KUEUE, "kind": kind, "metadata": metadata, "spec": spec}


def _group(flavors: list[str], resources: list[str], quota: str = "1") -> dict[str, Any]:
    return {
        "coveredResources": resources,
        "flavors": [
            {"name": flavor, "resources": [{"name": r, "nominalQuota": quota} for r in resources]} for flavor in flavors
        ],
    }


def queue(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"resourceGroups": [_group(["default"], ["cpu"])]}
    body.update(spec)
    return _object("ClusterQueue", body, name="team-a")


def flavor(**spec: Any) -> dict[str, Any]:
    return _object("ResourceFlavor", spec, name="gpu")


def topology(*labels: str) -> dict[str, Any]:
    return _object("Topology", {"levels": [{"nodeLabel": label} for label in labels]}, name="default")


def pod_set(name: str = "main", count: int = 1, **extra: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": "1"}}}
    return {"name": name, "count": count, "template": {"spec": {"containers": [container]}}, **extra}


def workload(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"queueName": "q", "podSets": [pod_set()]}
    body.update(spec)
    return _object("Workload", body, name="w", namespace="default")


def selector(**selector_spec: Any) -> dict[str, Any]:
    return queue(namespaceSelector=selector_spec)


def toleration(**fields: Any) -> dict[str, Any]:
    return flavor(tolerations=[{"key": "gpu", "operator": "Equal", "value": "x", "effect": "NoSchedule", **fields}])


def taint(**fields: Any) -> dict[str, Any]:
    return flavor(nodeTaints=[{"key": "gpu", "value": "true", "effect": "NoSchedule", **fields}])


def _many_groups(groups: int, flavors_each: int, resources_each: int) -> list[dict[str, Any]]:
    return [
        _group([f"f{g}-{f}" for f in range(flavors_each)], [f"example.com/r{g}-{r}" for r in range(resources_each)])
        for g in range(groups)
    ]


def _duplicated(document: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target: Any = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


KUEUE_RULE_CASES: list[tuple[str, dict[str, Any]]] = [
    # apiVersion and kind
    ("api-version-missing", {key: value for key, value in queue().items() if key != "apiVersion"}),
    # ResourceFlavor
    ("flavor-too-many-node-labels", flavor(nodeLabels={f"l{i}": "x" for i in range(9)})),
    ("flavor-node-label-key", flavor(nodeLabels={"bad key!": "x"})),
    ("flavor-node-label-value", flavor(nodeLabels={"gpu": "not ok!"})),
    ("flavor-taint-key", taint(key="bad key!")),
    ("flavor-taint-value", taint(value="not ok!")),
    (
        "flavor-taint-twice",
        flavor(nodeTaints=[{"key": "gpu", "value": "a", "effect": "NoSchedule"}] * 2),
    ),
    ("flavor-toleration-key", toleration(key="bad key!")),
    ("flavor-toleration-operator", toleration(operator="Maybe")),
    ("flavor-toleration-exists-with-value", toleration(operator="Exists")),
    ("flavor-toleration-empty-key-equal", toleration(key="")),
    ("flavor-toleration-effect", toleration(effect="Sometimes")),
    ("flavor-topology-name", flavor(topologyName="Bad_Name", nodeLabels={"gpu": "h100"})),
    # Topology
    ("topology-level-label", topology("bad label!")),
    ("topology-level-twice", topology("cloud.com/rack", "cloud.com/rack")),
    ("topology-too-many-levels", topology(*[f"cloud.com/l{i}" for i in range(17)])),
    # WorkloadPriorityClass
    (
        "priority-description-too-long",
        {
            "apiVersion": KUEUE,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "p"},
            "value": 1,
            "description": "d" * 2049,
        },
    ),
    # Workload (the CRD's schema bounds)
    ("workload-no-pod-sets", workload(podSets=[])),
    ("workload-pod-set-name", workload(podSets=[pod_set("Main_")])),
    ("workload-pod-set-twice", workload(podSets=[pod_set(), pod_set()])),
    ("workload-count-negative", workload(podSets=[pod_set(count=-1)])),
    ("workload-min-count-above-count", workload(podSets=[pod_set(count=2, minCount=3)])),
    ("workload-two-min-counts", workload(podSets=[pod_set("a", 2, minCount=1), pod_set("b", 2, minCount=1)])),
    ("workload-queue-name", workload(queueName="Bad Queue")),
    ("workload-priority-beyond-int32", workload(priority=2**40)),
    ("workload-max-execution-zero", workload(maximumExecutionTimeSeconds=0)),
    # ClusterQueue: resource groups
    ("queue-no-covered-resources", queue(resourceGroups=[{"coveredResources": [], "flavors": []}])),
    ("queue-too-many-groups", queue(resourceGroups=_many_groups(17, 1, 1))),
    ("queue-too-many-combinations", queue(resourceGroups=_many_groups(1, 23, 23))),
    ("queue-too-many-flavors-and-resources", queue(resourceGroups=_many_groups(16, 17, 17))),
    ("queue-resource-name", queue(resourceGroups=[_group(["default"], ["bad resource!"])])),
    ("queue-resource-covered-twice", queue(resourceGroups=[_group(["a"], ["cpu"]), _group(["b"], ["cpu"])])),
    ("queue-flavor-name", queue(resourceGroups=[_group(["Bad_Flavor"], ["cpu"])])),
    ("queue-flavor-twice", queue(resourceGroups=[_group(["a"], ["cpu"]), _group(["a"], ["memory"])])),
    (
        "queue-borrowing-limit-negative",
        _duplicated(
            queue(cohortName="research"),
            ["spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "borrowingLimit"],
            "-1",
        ),
    ),
    # ClusterQueue: the rest of its spec
    ("selector-label-key", selector(matchLabels={"bad key!": "x"})),
    ("selector-label-value", selector(matchLabels={"team": "not ok!"})),
    ("selector-expression-key", selector(matchExpressions=[{"key": "bad key!", "operator": "Exists"}])),
    ("selector-in-without-values", selector(matchExpressions=[{"key": "team", "operator": "In", "values": []}])),
    (
        "selector-exists-with-values",
        selector(matchExpressions=[{"key": "team", "operator": "Exists", "values": ["a"]}]),
    ),
    ("fungibility-preference", queue(flavorFungibility={"preference": "BorrowingOverPreemption"})),
    ("fair-sharing-weight-tiny", queue(fairSharing={"weight": "1n"})),
    (
        "admission-checks-and-strategy",
        queue(admissionChecks=["prov"], admissionChecksStrategy={"admissionChecks": [{"name": "prov"}]}),
    ),
    # Cohort
    ("cohort-parent-name", _object("Cohort", {"parentName": "Bad_Parent"}, name="research")),
    (
        "cohort-borrowing-limit-without-parent",
        _object(
            "Cohort",
            {
                "resourceGroups": [
                    _duplicated(_group(["default"], ["cpu"]), ["flavors", 0, "resources", 0, "borrowingLimit"], "1")
                ]
            },
            name="research",
        ),
    ),
    # AdmissionCheck and its parameter objects
    ("admission-check-no-controller", _object("AdmissionCheck", {})),
    ("admission-check-controller-too-long", _object("AdmissionCheck", {"controllerName": "c" * 254})),
    (
        "admission-check-parameters-incomplete",
        _object("AdmissionCheck", {"controllerName": "c", "parameters": {"kind": "K", "name": "n"}}),
    ),
    (
        "admission-check-parameters-too-long",
        _object(
            "AdmissionCheck", {"controllerName": "c", "parameters": {"apiGroup": "g", "kind": "K" * 64, "name": "n"}}
        ),
    ),
    ("provisioning-no-class", _object("ProvisioningRequestConfig", {})),
    ("provisioning-class-name", _object("ProvisioningRequestConfig", {"provisioningClassName": "Bad_Class"})),
    (
        "provisioning-too-many-resources",
        _object(
            "ProvisioningRequestConfig",
            {"provisioningClassName": "c.io", "managedResources": [f"example.com/r{i}" for i in range(101)]},
        ),
    ),
    (
        "provisioning-resource-name",
        _object("ProvisioningRequestConfig", {"provisioningClassName": "c.io", "managedResources": ["bad resource!"]}),
    ),
    (
        "provisioning-too-many-parameters",
        _object(
            "ProvisioningRequestConfig",
            {"provisioningClassName": "c.io", "parameters": {f"p{i}": "v" for i in range(101)}},
        ),
    ),
    ("multikueue-config-no-clusters", _object("MultiKueueConfig", {"clusters": []})),
    ("multikueue-config-cluster-twice", _object("MultiKueueConfig", {"clusters": ["a", "a"]})),
    ("multikueue-cluster-no-source", _object("MultiKueueCluster", {})),
]
