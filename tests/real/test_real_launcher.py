"""A TrainJob from queue to Complete on the real components.

Created with the official client (not trainyard's), it goes through trainyard's webhook (queue
label, suspend), gets a Workload admitted in Kueue's shape with a topologyAssignment, a JobSet
that the real JobSet controller turns into Jobs, whose pods the real Job controller makes; the
ungater lifts each pod's gate with its placed node, kube-scheduler binds it exactly there, KWOK
runs it, and the TrainJob ends Complete; deleting it collects its Workload, JobSet and pods.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as official_client
from real_support import KUEUE_API, PoolFactory, trainjob

from scheduler.api.topology_assignment import decode_topology_assignment
from tests.eventually import eventually_blocking

TRAINER_GROUP = ("trainer.kubeflow.org", "v1alpha1")


def _workloads(custom: official_client.CustomObjectsApi, namespace: str) -> list[dict[str, Any]]:
    group, version = KUEUE_API.split("/")
    listed: dict[str, Any] = custom.list_namespaced_custom_object(group, version, namespace, "workloads")
    return list(listed["items"])


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _placed_nodes(workload: dict[str, Any]) -> list[str]:
    """The node of each pod of a Workload's topologyAssignment (Kueue v0.17's compressed form)."""
    nodes: list[str] = []
    for pod_set in workload["status"]["admission"]["podSetAssignments"]:
        nodes.extend(decode_topology_assignment(pod_set["topologyAssignment"]).pod_nodes())
    return sorted(nodes)


def test_trainjob_runs_to_complete_on_the_placed_nodes(pool: PoolFactory, kube: official_client.ApiClient) -> None:
    one = pool(blocks=2, nodes_per_block=2, gpus_per_node=8)
    custom = official_client.CustomObjectsApi(kube)
    core = official_client.CoreV1Api(kube)
    group, version = TRAINER_GROUP
    created = custom.create_namespaced_custom_object(
        group, version, one.namespace, "trainjobs", trainjob("llama", one.namespace, nodes=2, gpus=8, run_seconds=3)
    )
    assert created["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"  # the mutating webhook
    assert created["spec"]["suspend"] is True

    workload = eventually_blocking(
        lambda: next((w for w in _workloads(custom, one.namespace) if _condition(w, "Admitted")), None),
        timeout=60,
        what="the TrainJob's Workload admitted",
    )
    admission = workload["status"]["admission"]
    assert admission["clusterQueue"] == one.cluster_queue
    assert admission["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"] == one.flavor
    placed = _placed_nodes(workload)
    assert len(placed) == 2
    assert set(placed) <= set(one.nodes)

    def bound() -> list[str] | None:
        pods = core.list_namespaced_pod(one.namespace).items
        nodes = sorted(p.spec.node_name for p in pods if p.spec.node_name)
        return nodes if len(nodes) == 2 else None

    assert eventually_blocking(bound, timeout=60, what="both pods bound by kube-scheduler") == placed

    def complete() -> dict[str, Any] | None:
        job = custom.get_namespaced_custom_object(group, version, one.namespace, "trainjobs", "llama")
        condition = _condition(job, "Complete")
        return job if condition and condition["status"] == "True" else None

    eventually_blocking(complete, timeout=90, what="the TrainJob Complete")
    finished = eventually_blocking(
        lambda: next((w for w in _workloads(custom, one.namespace) if _condition(w, "Finished")), None),
        timeout=30,
        what="the Workload Finished",
    )
    assert finished["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"

    custom.delete_namespaced_custom_object(group, version, one.namespace, "trainjobs", "llama")
    eventually_blocking(lambda: not _workloads(custom, one.namespace), timeout=60, what="the Workload collected")
    eventually_blocking(
        lambda: (
            not custom.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", one.namespace, "jobsets")["items"]
        ),
        timeout=60,
        what="the JobSet collected by the garbage collector",
    )
