"""/validate/kueue over HTTPS: every Kueue object rule (kueue.md §7), allowing and denying."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from builders import ClusterQueueBuilder, CohortBuilder, LocalQueueBuilder, ResourceFlavorBuilder, TopologyBuilder
from webhook_support import Webhook, review

KUEUE = "kueue.x-k8s.io/v1beta2"


def cluster_queue(**spec: Any) -> dict[str, Any]:
    """team-c-cq in cohort research, 32 cpu and 8 GPUs (4 lent) on gpu-a100; ``spec`` overrides raw fields."""
    builder = ClusterQueueBuilder("team-c-cq").cohort("research")
    builder.quota("gpu-a100", "cpu", 32).quota("gpu-a100", "nvidia.com/gpu", 8, lending_limit=4)
    return builder.spec(**spec).doc()


def flavor(**spec: Any) -> dict[str, Any]:
    return ResourceFlavorBuilder("spot").spec(**spec).doc()


def topology(*labels: str) -> dict[str, Any]:
    return TopologyBuilder("dc", *labels).doc()


def cohort(**spec: Any) -> dict[str, Any]:
    return CohortBuilder("org").spec(**spec).doc()


def local_queue(cq: str, name: str = "training") -> dict[str, Any]:
    return LocalQueueBuilder(name, "team-a").cluster_queue(cq).doc()


def priority_class(value: Any, description: str = "batch") -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "batch"},
        "value": value,
        "description": description,
    }


def with_quota(field: str, value: str, *, cohort_name: str | None = "research") -> dict[str, Any]:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1] = {
        "name": "nvidia.com/gpu",
        "nominalQuota": "8",
        field: value,
    }
    if cohort_name is None:
        del cq["spec"]["cohortName"]
    return cq


def two_groups(second: dict[str, Any]) -> dict[str, Any]:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"].append(second)
    return cq


def reordered_resources() -> dict[str, Any]:
    cq = cluster_queue()
    resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    resources.reverse()
    return cq


VALID = [
    pytest.param(cluster_queue(), id="cq-valid"),
    pytest.param(with_quota("borrowingLimit", "0"), id="cq-borrowing-limit-zero-with-cohort"),
    pytest.param(
        cluster_queue(preemption={"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}),
        id="cq-borrow-within-cohort-with-reclaim",
    ),
    pytest.param(
        cluster_queue(
            flavorFungibility={
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "PreemptionOverBorrowing",
            }
        ),
        id="cq-fungibility-preference",
    ),
    pytest.param(cluster_queue(fairSharing={"weight": "0"}), id="cq-fair-sharing-weight-zero"),
    pytest.param(
        cluster_queue(admissionChecksStrategy={"admissionChecks": [{"name": "prov", "onFlavors": ["gpu-a100"]}]}),
        id="cq-admission-check-on-known-flavor",
    ),
    pytest.param(local_queue("team-a-cq"), id="lq-valid"),
    pytest.param(
        flavor(
            nodeLabels={"cloud.example.com/pool": "spot"},
            nodeTaints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}],
            tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            topologyName="default",
        ),
        id="rf-valid-tas",
    ),
    pytest.param(topology("cloud.example.com/block", "kubernetes.io/hostname"), id="topology-valid"),
    pytest.param(cohort(parentName="company"), id="cohort-valid"),
    pytest.param(priority_class(1000), id="wpc-valid"),
]

INVALID = [
    pytest.param(
        with_quota("nominalQuota", "-1"), "nominalQuota: must be greater than or equal to 0", id="cq-negative-nominal"
    ),
    pytest.param(
        with_quota("borrowingLimit", "2", cohort_name=None),
        "borrowingLimit: must be nil when cohort is empty",
        id="cq-borrowing-without-cohort",
    ),
    pytest.param(
        with_quota("lendingLimit", "2", cohort_name=None),
        "lendingLimit: must be nil when cohort is empty",
        id="cq-lending-without-cohort",
    ),
    pytest.param(
        with_quota("lendingLimit", "9"), "must be less than or equal to nominalQuota (8)", id="cq-lending-above-nominal"
    ),
    pytest.param(
        cluster_queue(preemption={"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}),
        "borrowWithinCohort.policy: must be Never when reclaimWithinCohort is Never",
        id="cq-borrow-within-cohort-without-reclaim",
    ),
    pytest.param(
        cluster_queue(flavorFungibility={"whenCanBorrow": "MayStopSearch", "preference": "BorrowingOverPreemption"}),
        "preference: may only be set when whenCanBorrow and whenCanPreempt are both TryNextFlavor",
        id="cq-preference-without-try-next",
    ),
    pytest.param(
        cluster_queue(fairSharing={"weight": "1n"}), "must be 0 or greater than 1e-9", id="cq-tiny-fair-weight"
    ),
    pytest.param(
        cluster_queue(fairSharing={"weight": "-1"}),
        "weight: must be greater than or equal to 0",
        id="cq-negative-weight",
    ),
    pytest.param(reordered_resources(), "must list exactly the coveredResources", id="cq-resources-out-of-order"),
    pytest.param(
        two_groups(
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "cpu", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
            }
        ),
        "'cpu' is already covered by resourceGroups[0]",
        id="cq-resource-in-two-groups",
    ),
    pytest.param(
        two_groups(
            {
                "coveredResources": ["memory"],
                "flavors": [{"name": "gpu-a100", "resources": [{"name": "memory", "nominalQuota": "1Gi"}]}],
            }
        ),
        "flavor 'gpu-a100' is already listed",
        id="cq-flavor-in-two-groups",
    ),
    pytest.param(
        two_groups(
            {
                "coveredResources": ["bad resource!"],
                "flavors": [{"name": "x", "resources": [{"name": "bad resource!", "nominalQuota": "1"}]}],
            }
        ),
        "coveredResources[0]: 'bad resource!'",
        id="cq-invalid-resource-name",
    ),
    pytest.param(
        cluster_queue(namespaceSelector={"matchExpressions": [{"key": "team", "operator": "In"}]}),
        "values: must be non-empty when operator is In",
        id="cq-bad-namespace-selector",
    ),
    pytest.param(
        cluster_queue(resourceGroups=[{"coveredResources": ["cpu"], "flavors": []}] * 17),
        "must have at most 16 items",
        id="cq-too-many-groups",
    ),
    pytest.param(cluster_queue(queueingStrategy="Random"), "spec.queueingStrategy", id="cq-unknown-queueing-strategy"),
    pytest.param(
        local_queue("Team_A"), "spec.clusterQueue: 'Team_A' must be a DNS-1123 subdomain", id="lq-bad-cq-name"
    ),
    pytest.param(local_queue(""), "spec.clusterQueue: must not be empty", id="lq-empty-cq"),
    pytest.param(
        flavor(topologyName="default"), "must have at least one label when spec.topologyName", id="rf-tas-no-labels"
    ),
    pytest.param(
        flavor(nodeTaints=[{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}]),
        "duplicate taint key 'a' with effect NoSchedule",
        id="rf-duplicate-taint",
    ),
    pytest.param(
        flavor(nodeTaints=[{"key": "a", "effect": "Sometimes"}]), "'Sometimes' is not one of", id="rf-bad-taint-effect"
    ),
    pytest.param(
        flavor(nodeLabels={f"l{i}": "x" for i in range(9)}), "nodeLabels: must have at most 8 items", id="rf-9-labels"
    ),
    pytest.param(
        flavor(tolerations=[{"key": "a", "operator": "Exists", "value": "b"}]),
        "value: must be empty when operator is Exists",
        id="rf-toleration-exists-with-value",
    ),
    pytest.param(flavor(nodeLabels={"pool": "not valid!"}), "nodeLabels[pool]", id="rf-bad-label-value"),
    pytest.param(topology(), "must have 1 to 16 levels, got 0", id="topology-no-levels"),
    pytest.param(
        topology("kubernetes.io/hostname", "cloud.example.com/rack"),
        "only allowed as the lowest (last) level",
        id="topology-hostname-not-lowest",
    ),
    pytest.param(topology("rack", "rack"), "'rack' is listed twice", id="topology-duplicate-level"),
    pytest.param(cohort(parentName="org"), "a Cohort cannot be its own parent", id="cohort-own-parent"),
    pytest.param(
        cohort(
            resourceGroups=[
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "cpu", "resources": [{"name": "cpu", "nominalQuota": "4", "borrowingLimit": "1"}]}
                    ],
                }
            ]
        ),
        "borrowingLimit: must be nil when parentName is empty",
        id="cohort-limit-without-parent",
    ),
    pytest.param(priority_class(2**31), "value: must fit in a 32-bit integer", id="wpc-value-overflow"),
    pytest.param(
        priority_class(1, "x" * 2049), "description: must be at most 2048 characters", id="wpc-long-description"
    ),
    pytest.param(priority_class("high"), "value", id="wpc-value-not-integer"),
]


@pytest.mark.parametrize("obj", VALID)
async def test_valid_kueue_objects_are_allowed(webhook: Webhook, obj: dict[str, Any]) -> None:
    response = await webhook.admit("/validate/kueue", review(obj))
    assert response["allowed"] is True, response
    assert "warnings" not in response


@pytest.mark.parametrize(("obj", "expected"), INVALID)
async def test_invalid_kueue_objects_are_denied(webhook: Webhook, obj: dict[str, Any], expected: str) -> None:
    response = await webhook.admit("/validate/kueue", review(obj))
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert response["status"]["reason"] == "Invalid"
    assert expected in response["status"]["message"], response["status"]["message"]
    name = obj["metadata"]["name"]
    assert f'{obj["kind"]} "' in response["status"]["message"]
    assert name in response["status"]["message"]


UPDATES = [
    pytest.param(
        local_queue("team-a-cq"),
        local_queue("team-b-cq"),
        "spec.clusterQueue: field is immutable",
        id="lq-cq-immutable",
    ),
    pytest.param(
        flavor(nodeLabels={"a": "b"}, topologyName="default"),
        flavor(nodeLabels={"a": "b"}, topologyName="other"),
        "spec.topologyName: field is immutable once set",
        id="rf-topology-immutable",
    ),
    pytest.param(
        topology("rack", "block"),
        topology("rack", "block", "zone"),
        "immutable unless kubernetes.io/hostname is the lowest level",
        id="topology-levels-immutable",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), UPDATES)
async def test_immutable_fields_are_denied_on_update(
    webhook: Webhook, old: dict[str, Any], new: dict[str, Any], expected: str
) -> None:
    response = await webhook.admit("/validate/kueue", review(new, operation="UPDATE", old=old))
    assert response["allowed"] is False
    assert expected in response["status"]["message"]
    # the same object unchanged is fine
    response = await webhook.admit("/validate/kueue", review(old, operation="UPDATE", old=copy.deepcopy(old)))
    assert response["allowed"] is True


async def test_topology_levels_may_change_when_hostname_stays_lowest(webhook: Webhook) -> None:
    old = topology("rack", "kubernetes.io/hostname")
    new = topology("block", "rack", "kubernetes.io/hostname")
    response = await webhook.admit("/validate/kueue", review(new, operation="UPDATE", old=old))
    assert response["allowed"] is True


async def test_v1beta1_spelling_is_allowed_with_warnings(webhook: Webhook) -> None:
    cq = cluster_queue()
    cq["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    cq["spec"]["cohort"] = cq["spec"].pop("cohortName")
    response = await webhook.admit("/validate/kueue", review(cq))
    assert response["allowed"] is True
    assert any("spec.cohort is deprecated; use spec.cohortName" in w for w in response["warnings"])
    assert any("kueue.x-k8s.io/v1beta1 ClusterQueue is deprecated" in w for w in response["warnings"])


async def test_a_check_on_a_flavor_the_queue_does_not_list_is_allowed_with_a_warning(webhook: Webhook) -> None:
    # Kueue's webhook accepts it (its own site/static/examples/admin/minimal-cq.yaml does this)
    cq = cluster_queue(admissionChecksStrategy={"admissionChecks": [{"name": "prov", "onFlavors": ["h100"]}]})
    response = await webhook.admit("/validate/kueue", review(cq))
    assert response["allowed"] is True
    assert any("flavor 'h100' is not one of this ClusterQueue's flavors" in w for w in response["warnings"])
    assert any("check 'prov' never runs for it" in w for w in response["warnings"])


async def test_v1beta1_limit_rules_read_the_old_cohort_field(webhook: Webhook) -> None:
    cq = with_quota("borrowingLimit", "2", cohort_name=None)
    cq["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    response = await webhook.admit("/validate/kueue", review(cq))
    assert response["allowed"] is False
    cq["spec"]["cohort"] = "research"
    response = await webhook.admit("/validate/kueue", review(cq))
    assert response["allowed"] is True


async def test_delete_is_always_allowed(webhook: Webhook) -> None:
    response = await webhook.admit("/validate/kueue", review(None, operation="DELETE", old=local_queue("x")))
    assert response["allowed"] is True


async def test_non_kueue_kind_is_denied_with_a_message(webhook: Webhook) -> None:
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}
    response = await webhook.admit("/validate/kueue", review(obj))
    assert response["allowed"] is False
    assert "is not validated here" in response["status"]["message"]
