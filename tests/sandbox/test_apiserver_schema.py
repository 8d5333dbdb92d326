"""Custom resources held to their CRD's structural schema, as kube-apiserver holds them.

Every message below is the one kube-apiserver v1.35 answered for the same request on Kueue
v0.17's CRDs (tests/real/test_differential.py holds the two side by side where the real
components are built): unknown fields pruned with a ``Warning: unknown field`` header, defaults
filled in (nested ``default: {}`` included), and 422 ``Invalid`` for what the schema refuses.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi.fixtures import FakeApi
from sandbox_support import MERGE, raw

CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
RULES_NOT_CHECKED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
QUANTITY = "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$"
NAME_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def cluster_queue(name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def resource_group(*flavors: dict[str, Any], covered: tuple[str, ...] = ("cpu",)) -> dict[str, Any]:
    return {"coveredResources": list(covered), "flavors": list(flavors)}


def flavor(name: str = "f", quota: Any = 1, **limits: Any) -> dict[str, Any]:
    return {"name": name, "resources": [{"name": "cpu", "nominalQuota": quota, **limits}]}


def workload(name: str, **spec: Any) -> dict[str, Any]:
    pod_set = {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"queueName": "default", "podSets": [pod_set], **spec},
    }


async def test_unknown_fields_are_pruned_with_a_warning_each(fake_api: FakeApi) -> None:
    body = workload("w")
    body["metadata"]["foo"] = "bar"
    body["spec"]["madeUp"] = 1
    body["spec"]["podSets"][0]["extra"] = 2
    async with raw(fake_api) as api:
        created = await api.send("POST", WL, body)
        assert created.status == 201, created.body
        assert created.warnings == [
            'unknown field "metadata.foo"',
            'unknown field "spec.madeUp"',
            'unknown field "spec.podSets[0].extra"',
        ]
        assert "madeUp" not in created.body["spec"]
        assert "foo" not in created.body["metadata"]
        assert "extra" not in created.body["spec"]["podSets"][0]
        patched = await api.send("PATCH", f"{WL}/w", {"spec": {"another": 1}}, MERGE)
        assert patched.warnings == ['unknown field "spec.another"']
        assert "another" not in patched.body["spec"]
        status = await api.send("PATCH", f"{WL}/w/status", {"status": {"other": 1}}, MERGE)
        assert status.warnings == ['unknown field "status.other"']


async def test_defaults_are_filled_in_nested_ones_included(fake_api: FakeApi) -> None:
    async with raw(fake_api) as api:
        created = await api.send("POST", CQ, cluster_queue("cq", {"resourceGroups": [], "queueingStrategy": None}))
        assert created.status == 201, created.body
        assert created.body["spec"] == {
            "resourceGroups": [],
            "queueingStrategy": "BestEffortFIFO",  # a null the schema does not allow gets the default
            "stopPolicy": "None",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "preemption": {
                "withinClusterQueue": "Never",
                "reclaimWithinCohort": "Never",
                "borrowWithinCohort": {"policy": "Never"},
            },
        }
        body = workload("w")
        del body["spec"]["podSets"][0]["count"]
        made = await api.send("POST", WL, body)
        assert made.status == 201, made.body
        assert made.body["spec"]["active"] is True
        assert made.body["spec"]["podSets"][0]["count"] == 1


# (spec, the field errors, whether they are blocking: then CEL rules are not checked, and the answer says so)
INVALID_CLUSTER_QUEUES = [
    pytest.param(
        {"queueingStrategy": "Sideways"},
        ['spec.queueingStrategy: Unsupported value: "Sideways": supported values: "StrictFIFO", "BestEffortFIFO"'],
        True,
        id="enum",
    ),
    pytest.param(
        {"cohortName": "Bad_Name"},
        [f"spec.cohortName: Invalid value: \"Bad_Name\": spec.cohortName in body should match '{NAME_PATTERN}'"],
        False,
        id="pattern",
    ),
    pytest.param(
        {"cohortName": "a" * 300}, ["spec.cohortName: Too long: may not be more than 253 bytes"], True, id="maxLength"
    ),
    pytest.param(
        {"resourceGroups": [resource_group(flavor(f"f{i}"), covered=(f"r{i}",)) for i in range(17)]},
        ["spec.resourceGroups: Too many: 17: must have at most 16 items"],
        True,
        id="maxItems",
    ),
    pytest.param(
        {"preemption": {"borrowWithinCohort": {"policy": "Never", "maxPriorityThreshold": "x"}}},
        [
            'spec.preemption.borrowWithinCohort.maxPriorityThreshold: Invalid value: "string": '
            'spec.preemption.borrowWithinCohort.maxPriorityThreshold in body must be of type integer: "string"'
        ],
        True,
        id="type",
    ),
    pytest.param(
        {"resourceGroups": [{"coveredResources": ["cpu"]}]},
        ["spec.resourceGroups[0].flavors: Required value"],
        True,
        id="required",
    ),
    pytest.param(
        {"resourceGroups": [resource_group(flavor(quota="1x"))]},
        [
            'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "1x": '
            f"spec.resourceGroups[0].flavors[0].resources[0].nominalQuota in body should match '{QUANTITY}'"
        ],
        False,
        id="quantity",
    ),
    pytest.param(
        {"resourceGroups": [resource_group(flavor("f"), flavor("f"))]},
        ['spec.resourceGroups[0].flavors[1]: Duplicate value: {"name":"f"}'],
        False,
        id="duplicate-key",
    ),
]


@pytest.mark.parametrize(("spec", "errors", "blocking"), INVALID_CLUSTER_QUEUES)
async def test_what_the_schema_refuses_is_422_in_kube_apiservers_words(
    fake_api: FakeApi, spec: dict[str, Any], errors: list[str], blocking: bool
) -> None:
    async with raw(fake_api) as api:
        refused = await api.send("POST", CQ, cluster_queue("bad", spec))
    assert refused.status == 422, refused.body
    expected = errors + ([RULES_NOT_CHECKED] if blocking else [])
    listed = expected[0] if len(expected) == 1 else "[" + ", ".join(expected) + "]"
    assert refused.body["message"] == f'ClusterQueue.kueue.x-k8s.io "bad" is invalid: {listed}'
    assert refused.body["reason"] == "Invalid"
    assert refused.body["details"]["kind"] == "ClusterQueue"
    assert [c["field"] for c in refused.body["details"]["causes"]] == [e.split(":")[0] for e in expected]


async def test_a_workload_kueues_crd_refuses_is_refused(fake_api: FakeApi) -> None:
    many = workload("many")
    many["spec"]["podSets"] = [{**many["spec"]["podSets"][0], "name": f"ps{i}"} for i in range(9)]
    unnamed_class = workload("unnamed", priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass"})
    async with raw(fake_api) as api:
        too_many = await api.send("POST", WL, many)
        no_name = await api.send("POST", WL, unnamed_class)
    assert too_many.status == 422
    assert "spec.podSets: Too many: 9: must have at most 8 items" in too_many.body["message"]
    assert no_name.status == 422
    assert "spec.priorityClassRef.name: Required value" in no_name.body["message"]


async def test_metadata_name_and_labels_are_validated_on_every_kind(fake_api: FakeApi) -> None:
    body = workload("Bad_Name")
    body["metadata"]["labels"] = {"bad key!": "v"}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"k": "bad value!"}}}
    async with raw(fake_api) as api:
        refused = await api.send("POST", WL, body)
        refused_map = await api.send("POST", "/api/v1/namespaces/default/configmaps", config_map)
    assert refused.status == 422
    fields = [cause["field"] for cause in refused.body["details"]["causes"]]
    assert fields == ["metadata.name", "metadata.labels"]
    assert refused.body["message"].startswith(
        'Workload.kueue.x-k8s.io "Bad_Name" is invalid: [metadata.name: Invalid value: "Bad_Name": '
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
    )
    assert refused_map.status == 422
    assert refused_map.body["message"].startswith(
        'ConfigMap "c" is invalid: metadata.labels: Invalid value: "bad value!": a valid label must be an empty string'
    )
