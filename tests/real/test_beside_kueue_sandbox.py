"""``trainyard sandbox up --real --kueue``: real Kueue admits, trainyard is its topology check.

The sandbox scenario's flavor hands its Topology to a check of trainyard's; a TrainJob from an
independent client (the official ``kubernetes`` package) is admitted by Kueue once that check is
Ready, its pods are bound by kube-scheduler to the nodes the check placed them on, and it ends
Complete; Ctrl-C stops everything.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as official_client
from kubernetes import config as official_config
from real_support import KUEUE_API, trainjob

from sandbox.real.binaries import ClusterTools
from scheduler.api.topology_assignment import decode_topology_assignment
from tests.eventually import eventually_blocking

CHECK = "trainyard-topology-gpu-topology"  # the sandbox scenario's flavor is on Topology gpu-topology
PLACEMENT_ANNOTATION = "trainyard.io/topology-assignment"


def test_sandbox_up_real_kueue_runs_a_trainjob_through_trainyards_check(tmp_path: Path) -> None:
    if not ClusterTools.locate().has("kueue"):
        pytest.skip("kueue not built; run `make cluster-tools` (needs Go)")
    kubeconfig = tmp_path / "kueue.kubeconfig"
    argv = ["sandbox", "up", "--real", "--kueue", "--speedup", "5", "--kubeconfig-out", str(kubeconfig)]
    process = subprocess.Popen(
        [sys.executable, "-m", "trainyard", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        printed = process.stdout.readline().strip()  # the kubeconfig's path, once everything runs
        assert Path(printed) == kubeconfig.resolve(), "sandbox up --real --kueue printed no kubeconfig path"
        api = official_config.new_client_from_config(config_file=str(kubeconfig))
        _run_one_job(official_client.CustomObjectsApi(api), official_client.CoreV1Api(api))
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr[-3000:]
    assert "with Kueue admitting" in stderr


def _run_one_job(custom: official_client.CustomObjectsApi, core: official_client.CoreV1Api) -> None:
    group, version = KUEUE_API.split("/")
    job = trainjob("beside", "team-a", nodes=2, gpus=8, run_seconds=1)
    custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", "team-a", "trainjobs", job)

    def admitted() -> dict[str, Any] | None:
        listed = custom.list_namespaced_custom_object(group, version, "team-a", "workloads")["items"]
        conditions = [c for w in listed for c in (w.get("status") or {}).get("conditions") or ()]
        done = any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)
        return listed[0] if done else None

    workload = eventually_blocking(admitted, timeout=120, what="Kueue admitting the Workload")
    (state,) = [s for s in workload["status"]["admissionChecks"] if s["name"] == CHECK]
    assert state["state"] == "Ready"
    (update,) = state["podSetUpdates"]
    placed = sorted(decode_topology_assignment(json.loads(update["annotations"][PLACEMENT_ANNOTATION])).pod_nodes())
    assert "topologyAssignment" not in workload["status"]["admission"]["podSetAssignments"][0]  # not Kueue's TAS

    def bound() -> list[str] | None:
        nodes = sorted(p.spec.node_name for p in core.list_namespaced_pod("team-a").items if p.spec.node_name)
        return nodes if len(nodes) == 2 else None

    assert eventually_blocking(bound, timeout=90, what="the pods bound by kube-scheduler") == placed

    def complete() -> bool:
        got = custom.get_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", "team-a", "trainjobs", "beside")
        conditions = (got.get("status") or {}).get("conditions") or ()
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)

    eventually_blocking(complete, timeout=120, what="the TrainJob Complete")
