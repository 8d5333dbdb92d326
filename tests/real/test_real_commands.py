"""The user's commands on real components, each with a real cluster of its own.

- ``trainyard sandbox up --real``: an independent client (the official ``kubernetes`` package)
  runs a TrainJob from queue to Complete, its pods bound by kube-scheduler to the placement's
  nodes, and kubectl shows the Workload with Kueue's printer columns; Ctrl-C leaves no process
  and no port behind.
- ``trainyard simulate --backend sandbox --real``: a small scenario on the real components,
  its metrics beside the simulator's.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as official_client
from kubernetes import config as official_config
from real_support import trainjob

from scheduler.api.topology_assignment import decode_topology_assignment
from tests.eventually import eventually_blocking

SCENARIO = {
    "name": "real-small",
    "cluster": {"zones": 1, "spinesPerZone": 1, "blocksPerSpine": 2, "nodesPerBlock": 2},
    "teams": [{"name": "team-a", "share": 0.5}, {"name": "team-b", "share": 0.5}],
    "workload": {"jobs": 8, "mix": "kalos", "load": 2.0, "maxDurationSeconds": 600},
}


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_sandbox_up_real_runs_a_trainjob_for_an_independent_client(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "real.kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "trainyard", "sandbox", "up", "--real", "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        printed = process.stdout.readline().strip()  # the kubeconfig's path, once everything runs
        assert Path(printed) == kubeconfig.resolve(), "sandbox up --real printed no kubeconfig path"
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        port = int(server.rsplit(":", 1)[1])
        api = official_config.new_client_from_config(config_file=str(kubeconfig))
        _run_one_job(api, kubeconfig)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)  # waits, and closes the pipes
    assert process.returncode == 0, stderr[-3000:]
    eventually_blocking(lambda: not _port_open(port), timeout=10, what="the API server's port free again")
    left = subprocess.run(["pgrep", "-f", str(kubeconfig.parent)], capture_output=True, text=True, check=False)
    assert left.stdout.strip() == "", f"processes left behind: {left.stdout}"


def _run_one_job(api: official_client.ApiClient, kubeconfig: Path) -> None:
    custom = official_client.CustomObjectsApi(api)
    core = official_client.CoreV1Api(api)
    job = trainjob("independent", "team-a", nodes=2, gpus=8, run_seconds=3)
    custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", "team-a", "trainjobs", job)

    def admitted() -> dict[str, Any] | None:
        listed = custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team-a", "workloads")["items"]
        return next((w for w in listed if (w.get("status") or {}).get("admission")), None)

    workload = eventually_blocking(admitted, timeout=90, what="the Workload admitted")
    assignment = workload["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    placed = sorted(decode_topology_assignment(assignment).pod_nodes())

    def bound() -> list[str] | None:
        nodes = sorted(p.spec.node_name for p in core.list_namespaced_pod("team-a").items if p.spec.node_name)
        return nodes if len(nodes) == 2 else None

    assert eventually_blocking(bound, timeout=90, what="the pods bound by kube-scheduler") == placed

    def complete() -> bool:
        job = custom.get_namespaced_custom_object(
            "trainer.kubeflow.org", "v1alpha1", "team-a", "trainjobs", "independent"
        )
        return any(
            c["type"] == "Complete" and c["status"] == "True" for c in (job.get("status") or {}).get("conditions", [])
        )

    eventually_blocking(complete, timeout=120, what="the TrainJob Complete")
    shown = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", "get", "workloads", "-n", "team-a"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    header = shown.splitlines()[0].split()
    assert header[:3] == ["NAME", "QUEUE", "RESERVED"], shown  # Kueue v0.17's printer columns
    assert "FINISHED" in header, shown


def test_simulate_on_real_components_beside_the_simulator(tmp_path: Path) -> None:
    scenario = tmp_path / "real-small.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainyard",
            "simulate",
            "--backend",
            "sandbox",
            "--real",
            "--scenario",
            str(scenario),
            "--speedup",
            "60",
            "--timeout",
            "300",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    rows = {row["metric"]: row for row in report["metrics"]}
    assert rows["jobs submitted"]["real"] == rows["jobs submitted"]["simulator"] == 8
    assert rows["jobs finished"]["real"] == rows["jobs finished"]["simulator"], rows
