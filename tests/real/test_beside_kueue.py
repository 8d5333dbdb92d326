"""trainyard beside a real Kueue v0.17, as its topology AdmissionCheck's controller.

One cluster with Kueue for this module (two admitters cannot share the session's cluster):
trainyard installed from manifests/beside-kueue (the AdmissionCheck, its RBAC) and running as
`trainyard serve --mode admission-check` with its ServiceAccount's token. A ClusterQueue names
the check; Kueue reserves quota and creates the Workloads of TrainJobs, trainyard places each
gang and answers, Kueue admits and unsuspends, trainyard's launcher renders the JobSet, its
ungater pins each pod to its placed node, kube-scheduler binds it there and KWOK runs it.

- a TrainJob is admitted by Kueue only after trainyard's check is Ready, and its pods land on
  the nodes the check placed them on;
- a TrainJob that does not fit the free nodes now (Kueue has the quota) gets Retry, and is
  admitted once the nodes are free;
- a TrainJob that can never fit is refused at submit, by trainyard's webhook.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from builders import ClusterQueueBuilder, LocalQueueBuilder, NodeBuilder, ResourceFlavorBuilder
from real_support import HOSTNAME_LABEL, KUEUE_API, TRAINER_API, service_kubeconfig, trainjob

from sandbox.embedded import bundled_runtimes
from sandbox.real.audit_log import audit_events
from sandbox.real.binaries import ClusterTools
from sandbox.real.control_plane import MANIFESTS, RealCluster, RealClusterSettings
from sandbox.real.install import service_documents
from sandbox.real.rest import RestClient, RestError
from sandbox.real.service_process import ServiceProcess
from sandbox.scenario_objects import stage_documents
from scheduler.api.topology_assignment import decode_topology_assignment
from simulations.kwok import KWOK_NODE_ANNOTATION
from simulations.scenarios import IMMEDIATE_STAGES_DIR
from tests.eventually import eventually_blocking

BESIDE_KUEUE = MANIFESTS / "beside-kueue"
CHECK = "trainyard-topology"  # manifests/beside-kueue/admission-check.yaml
PLACEMENT_ANNOTATION = "trainyard.io/topology-assignment"
SERVICE_USER = "system:serviceaccount:trainyard-system:trainyard-webhook"
NAMESPACE = "beside-kueue"
POOL = "beside-kueue"
NODES = 4
GPUS_PER_NODE = 8
QUOTA_GPUS = 2 * NODES * GPUS_PER_NODE  # Kueue's quota is twice the nodes: only trainyard sees they are full


@pytest.fixture(scope="module")
def kueue_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    tools = ClusterTools.locate()
    if not tools.has("kueue"):
        pytest.skip("real tier beside Kueue: kueue not built; run `make cluster-tools` (needs Go)")
    workdir = tmp_path_factory.mktemp("real-cluster-kueue")
    with RealCluster(tools, RealClusterSettings(kueue=True, audit=True), workdir=workdir) as cluster:
        for document in [
            *service_documents(BESIDE_KUEUE),
            *bundled_runtimes(),
            *stage_documents((IMMEDIATE_STAGES_DIR,)),
        ]:
            cluster.admin.apply(document)
        yield cluster


@pytest.fixture(scope="module")
def admin(kueue_cluster: RealCluster) -> Iterator[RestClient]:
    """The cluster's admin, with the pool every test here shares: 4 nodes of 8 GPUs, a flavor
    Kueue's TAS leaves alone, a ClusterQueue naming trainyard's check, the LocalQueue ``default``;
    then `trainyard serve --mode admission-check` as manifests/beside-kueue's Deployment runs it."""
    admin = kueue_cluster.admin
    for document in _pool_documents():
        admin.apply(document)
    kubeconfig = service_kubeconfig(kueue_cluster, "trainyard-beside-kueue.kubeconfig")
    service = ServiceProcess(
        kueue_cluster,
        kubeconfig,
        identity="trainyard-beside-kueue",
        extra_args=["--mode=admission-check", "--check-retry-seconds=1"],
    ).start()
    try:
        service.register_webhooks()
        eventually_blocking(lambda: _check_active(admin), timeout=60, what="trainyard's AdmissionCheck Active")
        eventually_blocking(
            lambda: _cluster_queue_active(admin), timeout=60, what="the ClusterQueue Active in Kueue's eyes"
        )
        yield admin
    finally:
        service.stop()


def _pool_documents() -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        ResourceFlavorBuilder(POOL).node_labels(**{"trainyard.test/pool": POOL}).doc(),
    ]
    for index in range(NODES):
        name = f"{POOL}-n{index}"
        node = (
            NodeBuilder(name)
            .labels(**{"trainyard.test/pool": POOL, HOSTNAME_LABEL: name})
            .capacity(cpu="64", memory="512Gi", pods="110", nvidia_com_gpu=str(GPUS_PER_NODE))
            .doc()
        )
        node["metadata"]["annotations"] = {KWOK_NODE_ANNOTATION: "fake"}
        documents.append(node)
    queue = (
        ClusterQueueBuilder(POOL)
        .quota(POOL, "cpu", 10_000)
        .quota(POOL, "memory", "100Ti")
        .quota(POOL, "nvidia.com/gpu", QUOTA_GPUS)
        .spec(admissionChecksStrategy={"admissionChecks": [{"name": CHECK}]})
    )
    documents.append(queue.doc())
    documents.append(LocalQueueBuilder("default", NAMESPACE).cluster_queue(POOL).doc())
    return documents


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


def _true(obj: dict[str, Any], kind: str) -> bool:
    return _conditions(obj).get(kind, {}).get("status") == "True"


def _check_active(admin: RestClient) -> bool:
    return _true(admin.get(f"/apis/{KUEUE_API}/admissionchecks/{CHECK}"), "Active")


def _cluster_queue_active(admin: RestClient) -> bool:
    return _true(admin.get(f"/apis/{KUEUE_API}/clusterqueues/{POOL}"), "Active")


def _submit(admin: RestClient, name: str, *, nodes: int, run_seconds: float) -> dict[str, Any]:
    job = trainjob(
        name,
        NAMESPACE,
        nodes=nodes,
        gpus=GPUS_PER_NODE,
        run_seconds=run_seconds,
        extra_labels={"kueue.x-k8s.io/queue-name": "default"},
    )
    created: dict[str, Any] = admin.request(
        "POST", f"/apis/{TRAINER_API}/namespaces/{NAMESPACE}/trainjobs", json.dumps(job).encode()
    )
    return created


def _workload_of(admin: RestClient, trainjob_name: str) -> dict[str, Any] | None:
    listed = admin.get(f"/apis/{KUEUE_API}/namespaces/{NAMESPACE}/workloads")["items"]
    owned = [
        w for w in listed if any(ref.get("name") == trainjob_name for ref in w["metadata"].get("ownerReferences") or ())
    ]
    return owned[0] if owned else None


def _check_state(workload: dict[str, Any]) -> dict[str, Any]:
    states = (workload.get("status") or {}).get("admissionChecks") or ()
    return next((s for s in states if s.get("name") == CHECK), {})


def _placed_nodes(workload: dict[str, Any]) -> list[str]:
    """The nodes the check placed the gang's pods on, from its podSetUpdates."""
    nodes: list[str] = []
    for update in _check_state(workload).get("podSetUpdates") or ():
        encoded = (update.get("annotations") or {}).get(PLACEMENT_ANNOTATION)
        if encoded:
            nodes.extend(decode_topology_assignment(json.loads(encoded)).pod_nodes())
    return sorted(nodes)


def _bound_nodes(admin: RestClient, trainjob_name: str, count: int) -> list[str] | None:
    pods = admin.get(
        f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=jobset.sigs.k8s.io/jobset-name%3D{trainjob_name}"
    )
    nodes = sorted(p["spec"]["nodeName"] for p in pods["items"] if p["spec"].get("nodeName"))
    return nodes if len(nodes) == count else None


def _trainjob(admin: RestClient, name: str) -> dict[str, Any]:
    found: dict[str, Any] = admin.get(f"/apis/{TRAINER_API}/namespaces/{NAMESPACE}/trainjobs/{name}")
    return found


def _admitted_after_ready(admin: RestClient, name: str, *, timeout: float) -> dict[str, Any]:
    """The TrainJob's Workload once admitted; fails if Kueue ever shows it admitted without the check Ready."""

    def admitted() -> dict[str, Any] | None:
        workload = _workload_of(admin, name)
        if workload is None:
            return None
        state = _check_state(workload).get("state", "")
        if _true(workload, "Admitted"):
            assert state == "Ready", f"Workload of {name} admitted with trainyard's check {state!r}"
            return workload
        return None

    workload = eventually_blocking(admitted, timeout=timeout, what=f"the Workload of {name} admitted by Kueue")
    check = _check_state(workload)
    assert check["lastTransitionTime"] <= _conditions(workload)["Admitted"]["lastTransitionTime"]
    return workload


def test_kueue_admits_after_the_check_is_ready_and_pods_land_on_the_placed_nodes(admin: RestClient) -> None:
    created = _submit(admin, "placed", nodes=2, run_seconds=2)
    assert created["spec"]["suspend"] is True  # the webhooks (Kueue's and trainyard's) hold it for Kueue
    workload = _admitted_after_ready(admin, "placed", timeout=90)
    assert workload["status"]["admission"]["clusterQueue"] == POOL
    check = _check_state(workload)
    assert "placed by trainyard" in check["message"]
    placed = _placed_nodes(workload)
    assert len(placed) == 2
    assert len(set(placed)) == 2
    assert set(placed) <= {f"{POOL}-n{i}" for i in range(NODES)}
    assert eventually_blocking(lambda: _bound_nodes(admin, "placed", 2), timeout=90, what="both pods bound") == placed
    pods = admin.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=jobset.sigs.k8s.io/jobset-name%3Dplaced")
    for pod in pods["items"]:  # Kueue merged the check's podSetUpdates; trainyard's ungater pinned each pod
        assert PLACEMENT_ANNOTATION in pod["metadata"]["annotations"]
        assert pod["spec"]["nodeSelector"][HOSTNAME_LABEL] == pod["spec"]["nodeName"]
    eventually_blocking(
        lambda: _true(_trainjob(admin, "placed"), "Complete"), timeout=120, what="the TrainJob Complete"
    )


def test_a_gang_that_does_not_fit_now_gets_retry_and_is_admitted_when_nodes_free(admin: RestClient) -> None:
    _submit(admin, "holder", nodes=3, run_seconds=15)
    _admitted_after_ready(admin, "holder", timeout=90)
    _submit(admin, "waiter", nodes=2, run_seconds=1)

    def retried() -> dict[str, Any] | None:
        workload = _workload_of(admin, "waiter")
        if workload is None:
            return None
        state = _check_state(workload)
        told = state.get("state") == "Retry" or int(state.get("retryCount") or 0) > 0
        return workload if told else None

    retry = eventually_blocking(
        retried, timeout=60, what="trainyard's check Retry on the waiting gang (Kueue had the quota)"
    )
    assert not _true(retry, "Admitted")
    holder = _workload_of(admin, "holder")
    assert holder is not None
    assert _true(holder, "Admitted")
    waiter = _admitted_after_ready(admin, "waiter", timeout=150)
    placed = _placed_nodes(waiter)
    assert (
        eventually_blocking(lambda: _bound_nodes(admin, "waiter", 2), timeout=90, what="the waiter's pods bound")
        == placed
    )


def test_a_gang_that_can_never_fit_is_refused_at_submit(admin: RestClient) -> None:
    nodes = QUOTA_GPUS // GPUS_PER_NODE + 1
    with pytest.raises(RestError) as refused:
        _submit(admin, "never", nodes=nodes, run_seconds=1)
    assert refused.value.status == 403
    assert "can never be admitted" in str(refused.value)
    with pytest.raises(RestError) as gone:
        _trainjob(admin, "never")
    assert gone.value.status == 404


def test_the_service_account_was_refused_nothing(kueue_cluster: RealCluster, admin: RestClient) -> None:
    """manifests/beside-kueue's RBAC covers every request the check, the launcher and the ungater sent."""
    time.sleep(1)  # the audit log is written asynchronously
    refused, sent = [], set()
    for event in audit_events(kueue_cluster.audit_log):
        if event.get("user", {}).get("username") != SERVICE_USER:
            continue
        ref = event.get("objectRef") or {}
        sent.add((event.get("verb"), ref.get("resource"), ref.get("subresource", "")))
        if (event.get("responseStatus") or {}).get("code") == 403:
            refused.append(f"{event.get('verb')} {event.get('requestURI')}")
    assert refused == []
    # the check answered on Workloads, set its AdmissionCheck Active and the launcher made JobSets
    assert {("patch", "workloads", "status"), ("patch", "admissionchecks", "status"), ("create", "jobsets", "")} <= sent
