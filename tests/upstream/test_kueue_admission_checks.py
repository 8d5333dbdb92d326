"""Admission checks as Kueue runs them, through `trainyard admit` and the pure rules.

QuotaReserved until every check of the ClusterQueue (for the flavors given) is Ready; a Rejected
check deactivates the workload and frees its quota; a ClusterQueue whose check is missing or
inactive admits nothing, with Kueue's reason; MultiKueue's constraints; the loader's handling of
the admission-check kinds and of foreign documents.
"""

from __future__ import annotations

import contextlib
import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from scheduler.api.kueue import AdmissionCheck, ClusterQueue, MultiKueueCluster, MultiKueueConfig, ResourceFlavor
from scheduler.engine import AdmissionEngine
from scheduler.engine.admission_checks import (
    AdmissionCheckRegistry,
    checks_for_workload,
    cluster_queue_inactive_reason,
)
from trainyard.cli.main import main

FLAVORS = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue, namespace: default}
spec: {clusterQueue: cq}
"""

PROVISIONING = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prov-config}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: prov-config}
spec: {provisioningClassName: check-capacity.autoscaling.x-k8s.io}
"""


def cluster_queue(checks: str = "", cpu_on_demand: str = "4", cpu_spot: str = "4") -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {{name: cq}}
        spec:
          namespaceSelector: {{}}
          resourceGroups:
          - coveredResources: [cpu]
            flavors:
            - name: on-demand
              resources: [{{name: cpu, nominalQuota: {cpu_on_demand}}}]
            - name: spot
              resources: [{{name: cpu, nominalQuota: {cpu_spot}}}]
        """
    ) + textwrap.indent(checks, "  ")


def job(name: str, cpu: str = "2", states: str = "") -> str:
    """A Workload as `kubectl get workload -o yaml` gives it, with ``states`` as its status.admissionChecks."""
    status = f"status:\n  admissionChecks:\n{textwrap.indent(states, '  ')}" if states else ""
    return (
        textwrap.dedent(
            f"""\
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        metadata: {{name: {name}, namespace: default}}
        spec:
          queueName: user-queue
          podSets:
          - name: main
            count: 1
            template:
              spec:
                containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
        """
        )
        + status
    )


def admit(tmp_path: Path, *documents: str) -> tuple[int, dict[str, Any], str]:
    path = tmp_path / "input.yaml"
    path.write_text("\n---\n".join(documents))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["admit", str(path), "-o", "json"])
    return code, (json.loads(out.getvalue()) if code == 0 else {}), err.getvalue()


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {workload["name"]: workload for workload in report["workloads"]}


ALL_FLAVORS = "admissionChecksStrategy:\n  admissionChecks:\n  - name: prov\n"


def test_quota_reserved_until_every_check_is_ready(tmp_path: Path) -> None:
    code, report, err = admit(
        tmp_path,
        FLAVORS,
        PROVISIONING,
        cluster_queue(ALL_FLAVORS),
        job("waiting"),
        job("ready", states="- {name: prov, state: Ready}\n"),
    )
    assert code == 0, err
    workloads = by_name(report)
    assert workloads["waiting"]["status"] == "QuotaReserved"
    assert "waiting for admission checks: prov (Pending)" in workloads["waiting"]["reason"]
    assert workloads["ready"]["status"] == "Admitted"
    assert workloads["ready"]["admissionChecks"] == [{"name": "prov", "state": "Ready", "message": ""}]
    (queue,) = report["clusterQueues"]
    assert (queue["admitted"], queue["quotaReserved"]) == (1, 1)
    assert report["admissionChecks"] == [
        {"name": "prov", "controllerName": "kueue.x-k8s.io/provisioning-request", "active": True, "reason": ""}
    ]


def test_a_check_on_some_flavors_applies_only_to_workloads_given_them(tmp_path: Path) -> None:
    on_spot = "admissionChecksStrategy:\n  admissionChecks:\n  - name: prov\n    onFlavors: [spot]\n"
    # on-demand holds one 2-cpu workload; the second goes to spot, where the check runs.
    code, report, err = admit(
        tmp_path, FLAVORS, PROVISIONING, cluster_queue(on_spot, cpu_on_demand="2"), job("a"), job("b")
    )
    assert code == 0, err
    workloads = by_name(report)
    assert workloads["a"]["flavors"] == {"cpu": "on-demand"}
    assert workloads["a"]["status"] == "Admitted"
    assert workloads["b"]["flavors"] == {"cpu": "spot"}
    assert workloads["b"]["status"] == "QuotaReserved"


def test_a_rejected_check_deactivates_the_workload_and_frees_its_quota(tmp_path: Path) -> None:
    code, report, err = admit(
        tmp_path,
        FLAVORS,
        PROVISIONING,
        cluster_queue(ALL_FLAVORS, cpu_on_demand="2", cpu_spot="0"),
        job("rejected", states="- {name: prov, state: Rejected, message: no capacity}\n"),
        job("second", states="- {name: prov, state: Ready}\n"),
    )
    assert code == 0, err
    workloads = by_name(report)
    assert workloads["rejected"]["status"] == "Deactivated"
    assert "prov rejected the workload" in workloads["rejected"]["reason"]
    assert "no capacity" in workloads["rejected"]["reason"]
    # Only 2 cpu: the second fits once the rejected one's quota is released.
    assert workloads["second"]["status"] == "Admitted"


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ("", ["references missing AdmissionCheck(s): prov", "AdmissionCheckNotFound"]),
        (
            PROVISIONING.split("---")[0],  # the check without its ProvisioningRequestConfig
            [
                "references inactive AdmissionCheck(s): prov",
                "BadParametersRef",
                "prov-config",
                "AdmissionCheckInactive",
            ],
        ),
    ],
    ids=["missing", "inactive"],
)
def test_a_cluster_queue_with_a_missing_or_inactive_check_admits_nothing(
    tmp_path: Path, extra: str, words: list[str]
) -> None:
    documents = [FLAVORS, cluster_queue(ALL_FLAVORS), job("a")] + ([extra] if extra else [])
    code, report, err = admit(tmp_path, *documents)
    assert code == 0, err
    (queue,) = report["clusterQueues"]
    assert queue["active"] is False
    (workload,) = report["workloads"]
    assert workload["status"] == "Pending"
    for word in words:
        assert word in workload["reason"]


def _registry(*objects: Any) -> AdmissionCheckRegistry:
    registry = AdmissionCheckRegistry()
    for obj in objects:
        assert registry.apply(obj)
    return registry


def _check(name: str, controller: str, parameters: dict[str, str] | None = None, **status: Any) -> AdmissionCheck:
    spec: dict[str, Any] = {"controllerName": controller}
    if parameters:
        spec["parameters"] = parameters
    return AdmissionCheck.model_validate({"metadata": {"name": name}, "spec": spec, "status": status})


def _cq(checks: list[dict[str, Any]]) -> ClusterQueue:
    return ClusterQueue.model_validate(
        {
            "metadata": {"name": "cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "a", "resources": [{"name": "cpu", "nominalQuota": "1"}]},
                            {"name": "b", "resources": [{"name": "cpu", "nominalQuota": "1"}]},
                        ],
                    }
                ],
                "admissionChecksStrategy": {"admissionChecks": checks},
            },
        }
    )


MK = {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk"}
MK_OBJECTS = (
    MultiKueueConfig.model_validate({"metadata": {"name": "mk"}, "spec": {"clusters": ["w1"]}}),
    MultiKueueCluster.model_validate(
        {"metadata": {"name": "w1"}, "spec": {"clusterSource": {"kubeConfig": {"location": "s"}}}}
    ),
)


def test_multikueue_constraints_as_kueue_words_them() -> None:
    registry = _registry(
        _check("mk1", "kueue.x-k8s.io/multikueue", MK),
        _check("mk2", "kueue.x-k8s.io/multikueue", MK),
        _check("custom", "example.com/ready", conditions=[{"type": "Active", "status": "True"}]),
        *MK_OBJECTS,
    )
    assert cluster_queue_inactive_reason(_cq([{"name": "mk1"}]), registry) is None
    assert cluster_queue_inactive_reason(_cq([{"name": "custom"}]), registry) is None
    two = cluster_queue_inactive_reason(_cq([{"name": "mk1"}, {"name": "mk2"}]), registry)
    assert two is not None
    assert "MultipleMultiKueueAdmissionChecks" in two
    per_flavor = cluster_queue_inactive_reason(_cq([{"name": "mk1", "onFlavors": ["a"]}]), registry)
    assert per_flavor is not None
    assert "MultiKueueAdmissionCheckAppliedPerFlavor" in per_flavor


def test_multikueue_check_is_inactive_without_a_usable_cluster() -> None:
    config = MK_OBJECTS[0]
    down = MultiKueueCluster.model_validate(
        {
            "metadata": {"name": "w1"},
            "spec": {"clusterSource": {}},
            "status": {"conditions": [{"type": "Active", "status": "False", "reason": "ClientConnectionFailed"}]},
        }
    )
    check = _check("mk1", "kueue.x-k8s.io/multikueue", MK)
    assert "NoUsableClusters" in (_registry(check, config).inactive_reason(check) or "")
    assert "NoUsableClusters" in (_registry(check, config, down).inactive_reason(check) or "")
    assert "MultiKueueConfig 'mk' not found" in (_registry(check).inactive_reason(check) or "")
    unknown = _check("x", "example.com/unknown")
    assert "no controller runs 'example.com/unknown'" in (_registry(unknown).inactive_reason(unknown) or "")


def test_checks_for_workload_follow_the_assigned_flavors() -> None:
    cq = _cq([{"name": "everywhere"}, {"name": "only-b", "onFlavors": ["b"]}])
    assert checks_for_workload(cq, ["a"]) == ["everywhere"]
    assert checks_for_workload(cq, ["a", "b"]) == ["everywhere", "only-b"]


def test_the_engine_takes_and_forgets_admission_checks(tmp_path: Path) -> None:
    engine = AdmissionEngine()
    for flavor in ("a", "b"):
        engine.apply(ResourceFlavor.model_validate({"metadata": {"name": flavor}}))
    engine.apply(_cq([{"name": "mk1"}]))
    engine.schedule(0.0)
    assert "AdmissionCheckNotFound" in (engine.model.cluster_queues["cq"].inactive_reason or "")
    for obj in (_check("mk1", "kueue.x-k8s.io/multikueue", MK), *MK_OBJECTS):
        engine.apply(obj)
    engine.schedule(1.0)
    assert engine.model.cluster_queues["cq"].inactive_reason is None
    engine.delete("MultiKueueCluster", "w1")
    engine.schedule(2.0)
    assert "NoUsableClusters" in (engine.model.cluster_queues["cq"].inactive_reason or "")


def test_the_loader_reads_admission_check_kinds_and_skips_foreign_documents(tmp_path: Path) -> None:
    v1beta1 = PROVISIONING.replace("v1beta2", "v1beta1")
    foreign = "apiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload\nmetadata: {name: gang}\nspec: {}\n"
    (tmp_path / "dashboard.json").write_text('{"title": "pending workloads", "panels": []}')
    code, report, err = admit(tmp_path, FLAVORS, v1beta1, cluster_queue(ALL_FLAVORS), job("a"), foreign)
    assert code == 0, err
    assert "skipped Workload 'gang' (scheduling.k8s.io/v1alpha1)" in err
    assert by_name(report)["a"]["status"] == "QuotaReserved"
    out, err_out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err_out):
        code = main(["admit", str(tmp_path / "dashboard.json"), str(tmp_path / "input.yaml"), "-o", "json"])
    assert code == 0, err_out.getvalue()
    assert "dashboard.json:1: skipped a document" in err_out.getvalue()


def test_an_unknown_version_of_a_kueue_kind_names_the_versions_understood(tmp_path: Path) -> None:
    code, _, err = admit(tmp_path, PROVISIONING.replace("v1beta2", "v1alpha9", 1))
    assert code == 2
    assert "'kueue.x-k8s.io/v1alpha9' is not a version trainyard understands for AdmissionCheck" in err
    assert "kueue.x-k8s.io/v1beta2" in err
    assert "Traceback" not in err


def test_admission_check_rules_refuse_a_bad_object_with_its_field(tmp_path: Path) -> None:
    bad = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {name: x}\nspec: {}\n"
    code, _, err = admit(tmp_path, bad)
    assert code == 2
    assert 'AdmissionCheck "x" is invalid: spec.controllerName: is required' in err


def test_admission_scope_and_concurrent_admission_policy_are_said_to_have_no_effect(tmp_path: Path) -> None:
    extra = "admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n"
    extra += "concurrentAdmissionPolicy:\n  migration: {mode: TryPreferredFlavors}\n"
    code, report, err = admit(tmp_path, FLAVORS, cluster_queue(extra), job("a"))
    assert code == 0, err
    assert (
        'warning: ClusterQueue "cq": spec.admissionScope (admissionMode UsageBasedAdmissionFairSharing) has no effect'
        in err
    )
    assert 'ClusterQueue "cq": spec.concurrentAdmissionPolicy (migration mode TryPreferredFlavors) has no effect' in err
    assert "unknown field" not in err
    assert by_name(report)["a"]["status"] == "Admitted"
