"""The service as a platform admin runs it, on the real components.

- Two `trainyard serve` replicas: the standby takes the Lease when the leader is killed and
  admits the next job.
- trainyard's ServiceAccount holds only the manifests' RBAC, and the real authorizer refused
  none of its requests (kube-apiserver's audit log).
- `trainyard queues` and the SDK's Kubernetes backend work against the real API server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubernetes import client as official_client
from real_support import KUEUE_API, PoolFactory, trainjob

from sandbox.real.audit_log import audit_events
from sandbox.real.control_plane import RealCluster
from sandbox.real.service_process import ServiceProcess
from tests.eventually import eventually_blocking
from trainyard.sdk import KubernetesBackendConfig, TrainerClient

TRAINER = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
SERVICE_USER = "system:serviceaccount:trainyard-system:trainyard-webhook"
LEASE = ("coordination.k8s.io", "v1", "trainyard-system", "trainyard-controller")


def _admitted(custom: official_client.CustomObjectsApi, namespace: str) -> int:
    group, version = KUEUE_API.split("/")
    listed = custom.list_namespaced_custom_object(group, version, namespace, "workloads")["items"]
    return sum(
        1
        for w in listed
        if any(c["type"] == "Admitted" and c["status"] == "True" for c in (w.get("status") or {}).get("conditions", []))
    )


def _holder(kube: official_client.ApiClient) -> str | None:
    lease = official_client.CoordinationV1Api(kube).read_namespaced_lease(LEASE[3], LEASE[2])
    return str(lease.spec.holder_identity) if lease.spec and lease.spec.holder_identity else None


def test_the_standby_replica_takes_over_when_the_leader_dies(
    pool: PoolFactory,
    real_cluster: RealCluster,
    trainyard_service: ServiceProcess,
    trainyard_kubeconfig: Path,
    kube: official_client.ApiClient,
) -> None:
    one = pool(blocks=1, nodes_per_block=2)
    custom = official_client.CustomObjectsApi(kube)
    group, version, plural = TRAINER
    leader_identity = eventually_blocking(lambda: _holder(kube), what="a leader")
    assert leader_identity.startswith(trainyard_service.identity)
    standby = ServiceProcess(real_cluster, trainyard_kubeconfig, identity="trainyard-1").start()
    try:
        trainyard_service.kill()  # the leader crashes; the Service would send webhook calls to the survivor
        standby.register_webhooks()
        eventually_blocking(
            lambda: (_holder(kube) or "").startswith("trainyard-1"), timeout=60, what="the standby leading"
        )
        custom.create_namespaced_custom_object(group, version, one.namespace, plural, trainjob("after", one.namespace))
        eventually_blocking(lambda: _admitted(custom, one.namespace) == 1, timeout=60, what="the new leader admitting")
    finally:
        standby.stop()
        trainyard_service.start()
        trainyard_service.register_webhooks()


def test_the_service_account_was_never_refused(real_cluster: RealCluster, trainyard_service: ServiceProcess) -> None:
    """Every request trainyard made with its token was allowed by RBAC (the audit log's decisions)."""
    events = list(audit_events(real_cluster.audit_log))
    ours = [e for e in events if e.get("user", {}).get("username") == SERVICE_USER]
    assert ours, "trainyard made no request with its ServiceAccount's token"
    refused = [
        f"{e['verb']} {e.get('objectRef', {}).get('resource')} {e.get('requestURI')}"
        for e in ours
        if (e.get("annotations") or {}).get("authorization.k8s.io/decision") == "forbid"
    ]
    assert not refused, f"RBAC refused trainyard: {refused[:10]}"


def test_queues_and_the_sdk_against_the_real_api_server(
    pool: PoolFactory, real_cluster: RealCluster, kube: official_client.ApiClient
) -> None:
    one = pool(blocks=1, nodes_per_block=2)
    kubeconfig = str(real_cluster.kubeconfig())
    client = TrainerClient(KubernetesBackendConfig(kubeconfig=kubeconfig, namespace=one.namespace))
    try:
        runtimes = [r.name for r in client.list_runtimes()]
        assert "torch-distributed" in runtimes
        name = client.train(runtime=client.get_runtime("torch-distributed"), trainer=_custom_trainer())
        job = client.wait_for_job_status(name, status={"Complete"}, timeout=120)
        assert job.status == "Complete"
    finally:
        client.close()
    listed = _trainyard("queues", "list", "--kubeconfig", kubeconfig)
    assert one.cluster_queue in listed
    group, version = KUEUE_API.split("/")
    custom = official_client.CustomObjectsApi(kube)
    [workload] = custom.list_namespaced_custom_object(group, version, one.namespace, "workloads")["items"]
    described = _trainyard(
        "queues", "describe", f"{one.namespace}/{workload['metadata']['name']}", "--kubeconfig", kubeconfig
    )
    assert one.cluster_queue in described


def train_on_one_node() -> None:
    print("trained")  # shipped to the pod; KWOK's pods run no code, their Stages end them


def _custom_trainer() -> Any:
    from trainyard.sdk import CustomTrainer

    return CustomTrainer(func=train_on_one_node, num_nodes=1, resources_per_node={"cpu": 1, "nvidia.com/gpu": 8})


def _trainyard(*args: str) -> str:
    wide = {**os.environ, "COLUMNS": "240"}  # long test queue names are not cropped
    result = subprocess.run(
        [sys.executable, "-m", "trainyard", *args], capture_output=True, text=True, check=False, timeout=120, env=wide
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
