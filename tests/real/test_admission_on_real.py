"""Admission decisions as the real API server and the real controllers carry them out.

- kubectl gets trainyard's refusal of a job that can never fit, in the webhook's own words;
- a higher-priority job preempts a running one: the victim's Workload is Evicted (Preempted),
  its JobSet deleted and its TrainJob suspended, and the preemptor's pods run;
- a KWOK node whose kubelet reports NotReady is tainted by kube-controller-manager's node
  lifecycle controller, and the gang's pod moves to another node of the same block.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from typing import Any

import yaml
from kubernetes import client as official_client
from real_support import KUEUE_API, PoolFactory, trainjob

from sandbox.real.commands import KWOK_CUSTOM_STATUS_ANNOTATION
from sandbox.real.control_plane import RealCluster
from scheduler.api.topology_assignment import decode_topology_assignment
from tests.eventually import eventually_blocking

TRAINER = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
KUEUE_GROUP, KUEUE_VERSION = KUEUE_API.split("/")


def _workload_of(custom: official_client.CustomObjectsApi, namespace: str, job: str) -> dict[str, Any] | None:
    listed = custom.list_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads")["items"]
    for workload in listed:
        if any(o.get("name") == job for o in workload["metadata"].get("ownerReferences") or ()):
            return dict(workload)
    return None


def _true(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def _host_of(workload: dict[str, Any]) -> list[str]:
    assignment = workload["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    return sorted(decode_topology_assignment(assignment).pod_nodes())


def test_kubectl_gets_the_webhooks_refusal_of_a_job_that_can_never_fit(
    pool: PoolFactory, real_cluster: RealCluster, tmp_path: Any
) -> None:
    one = pool(blocks=1, nodes_per_block=2, gpus_per_node=8)
    manifest = tmp_path / "too-big.yaml"
    manifest.write_text(yaml.safe_dump(trainjob("too-big", one.namespace, nodes=1, gpus=16)))
    result = subprocess.run(
        ["kubectl", f"--kubeconfig={real_cluster.kubeconfig()}", "apply", "-f", str(manifest)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert 'admission webhook "vtrainjob.trainyard.dev" denied the request' in result.stderr
    assert "8" in result.stderr, result.stderr  # the message says what the nodes hold


def test_a_higher_priority_job_preempts_and_the_victim_is_suspended(
    pool: PoolFactory, real_cluster: RealCluster, kube: official_client.ApiClient
) -> None:
    one = pool(blocks=1, nodes_per_block=2, gpus_per_node=8, preemption={"within_cluster_queue": "LowerPriority"})
    for name, value in ((f"{one.name}-low", 10), (f"{one.name}-high", 1000)):
        real_cluster.admin.apply(
            {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}
        )
    custom = official_client.CustomObjectsApi(kube)
    group, version, plural = TRAINER
    label = "kueue.x-k8s.io/priority-class"
    low = trainjob("low", one.namespace, nodes=2, gpus=8, run_seconds=3600, extra_labels={label: f"{one.name}-low"})
    custom.create_namespaced_custom_object(group, version, one.namespace, plural, low)
    eventually_blocking(
        lambda: _true(_workload_of(custom, one.namespace, "low"), "Admitted"), what="the low job admitted"
    )

    high = trainjob("high", one.namespace, nodes=2, gpus=8, run_seconds=5, extra_labels={label: f"{one.name}-high"})
    custom.create_namespaced_custom_object(group, version, one.namespace, plural, high)
    evicted = eventually_blocking(
        lambda: _true(_workload_of(custom, one.namespace, "low"), "Evicted"), what="the low job's Workload evicted"
    )
    assert evicted["reason"] == "Preempted"
    eventually_blocking(
        lambda: _true(_workload_of(custom, one.namespace, "high"), "Admitted"), what="the high job admitted"
    )
    eventually_blocking(
        lambda: custom.get_namespaced_custom_object(group, version, one.namespace, plural, "low")["spec"]["suspend"],
        what="the victim's TrainJob suspended",
    )
    eventually_blocking(
        lambda: _true(custom.get_namespaced_custom_object(group, version, one.namespace, plural, "high"), "Complete"),
        timeout=90,
        what="the preemptor Complete",
    )


def test_a_node_reported_not_ready_moves_the_pod_within_its_block(
    pool: PoolFactory, real_cluster: RealCluster, kube: official_client.ApiClient
) -> None:
    one = pool(blocks=2, nodes_per_block=2, gpus_per_node=8)
    custom = official_client.CustomObjectsApi(kube)
    core = official_client.CoreV1Api(kube)
    group, version, plural = TRAINER
    job = trainjob("steady", one.namespace, nodes=1, gpus=8, run_seconds=3600)
    custom.create_namespaced_custom_object(group, version, one.namespace, plural, job)
    admitted = eventually_blocking(
        lambda: (
            _true(_workload_of(custom, one.namespace, "steady"), "Admitted")
            and _workload_of(custom, one.namespace, "steady")
        ),
        what="the job admitted",
    )
    [node] = _host_of(admitted)
    block = node.rsplit("-n", 1)[0]
    eventually_blocking(
        lambda: [p for p in core.list_namespaced_pod(one.namespace).items if p.spec.node_name == node],
        what="its pod bound to the placed node",
    )
    _report_not_ready(real_cluster, node)

    def moved() -> str | None:
        workload = _workload_of(custom, one.namespace, "steady")
        if not workload or not _true(workload, "Admitted"):
            return None
        [now] = _host_of(workload)
        return now if now != node else None

    new_node = eventually_blocking(moved, timeout=120, what="the placement moved off the failed node")
    assert new_node.startswith(block), f"{new_node} is outside block {block}"
    eventually_blocking(
        lambda: [p for p in core.list_namespaced_pod(one.namespace).items if p.spec.node_name == new_node],
        timeout=90,
        what="a pod bound on the new node by kube-scheduler",
    )


def _report_not_ready(real_cluster: RealCluster, node: str) -> None:
    """The node's Ready condition turns False as a kubelet reports it (KWOK leaves the status of a
    node annotated ``kwok.x-k8s.io/status: custom`` to others; its Lease stays renewed)."""
    key, value = KWOK_CUSTOM_STATUS_ANNOTATION
    admin = real_cluster.admin
    annotate = {"metadata": {"annotations": {key: value}}}
    admin.request("PATCH", f"/api/v1/nodes/{node}", json.dumps(annotate).encode(), "application/merge-patch+json")
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "container runtime is down (reported by the test)",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    body = json.dumps({"status": {"conditions": [ready]}}).encode()
    admin.request("PATCH", f"/api/v1/nodes/{node}/status", body, "application/strategic-merge-patch+json")
