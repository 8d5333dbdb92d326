"""`trainyard serve --mode admission-check`: as a process against the embedded API server it runs
the topology check (the check turns Active, a gang Kueue reserved quota for is answered Ready),
and what the mode cannot run with is refused with the flag and the fix, exit 2, no traceback.
`trainyard sandbox up --real --kueue`: the scenario as the check places it beside Kueue (the
run itself is in tests/real/test_beside_kueue_sandbox.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from admission_check_support import CHECK, NS, reserve, seed_cluster
from builders import ClusterQueueBuilder, ResourceFlavorBuilder
from fakeapi.fixtures import FakeApi
from process_support import trainyard

from scheduler.api.kueue import AdmissionCheck
from scheduler.engine import TOPOLOGY_CHECK_CONTROLLER
from scheduler.kube import KubeClient
from tests.eventually import eventually
from trainyard.cli.main import main

BAD_FLAGS = [
    pytest.param(["--launcher", "trainer"], "drop --launcher trainer", id="trainer-launcher"),
    pytest.param(["--wait-for-pods-ready", "60"], "waitForPodsReady in Kueue's configuration", id="pods-ready"),
    pytest.param(["--dashboard-port", "8765"], "beside Kueue it does not run", id="dashboard"),
    pytest.param(["--check-retry-seconds", "0"], "must be above 0 and at most 300", id="retry-zero"),
    pytest.param(["--check-retry-seconds", "900"], "must be above 0 and at most 300", id="retry-too-long"),
]


@pytest.mark.parametrize(("flags", "fix"), BAD_FLAGS)
def test_flags_the_mode_cannot_run_with_are_refused(
    flags: list[str], fix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--mode", "admission-check", "--self-signed", *flags])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert fix in err


@pytest.mark.slow
async def test_serve_controller_in_admission_check_mode_answers_the_check(fake_api: FakeApi) -> None:
    seed_cluster(fake_api)
    api_client = await fake_api.api_client()
    client = KubeClient(api_client)
    argv = ["serve", "controller", "--mode", "admission-check", "--kubeconfig", str(fake_api.kubeconfig)]
    argv += ["--host", "127.0.0.1", "--metrics-port", "0", "--lease-namespace", "default", "--identity", "beside"]
    try:
        async with trainyard(*argv):

            async def active() -> bool:
                conditions = ((await client.get("AdmissionCheck", CHECK)).get("status") or {}).get("conditions") or []
                return any(c["type"] == "Active" and c["status"] == "True" for c in conditions)

            await eventually(active, timeout=60, what="the AdmissionCheck Active")
            await reserve(client, fake_api, "llm", 2)

            async def ready() -> str:
                workload = await client.get("Workload", "llm", NS)
                states = (workload.get("status") or {}).get("admissionChecks") or []
                return next((s["message"] for s in states if s["name"] == CHECK and s["state"] == "Ready"), "")

            assert "placed by trainyard" in await eventually(ready, timeout=60, what="the check Ready")
    finally:
        await api_client.close()


def test_sandbox_kueue_needs_real(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sandbox", "up", "--kueue", "--kubeconfig-out", str(tmp_path / "k")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--kueue needs --real" in err


def test_the_sandbox_scenario_beside_kueue_hands_each_topology_to_a_check_of_trainyards() -> None:
    from sandbox.real.service import beside_kueue_documents

    hosts = ResourceFlavorBuilder("cpu").doc()
    gpus = ResourceFlavorBuilder("gpu").topology("racks").doc()
    queue = ClusterQueueBuilder("cq").quota("gpu", "nvidia.com/gpu", 8).doc()
    queue["spec"]["resourceGroups"].append(
        {"coveredResources": ["cpu"], "flavors": [{"name": "cpu", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]}
    )
    documents = beside_kueue_documents([hosts, gpus, queue])
    by_name = {d["metadata"]["name"]: d for d in documents}
    assert "topologyName" not in by_name["gpu"]["spec"]  # else Kueue's own TAS would place it first
    assert gpus["spec"]["topologyName"] == "racks"  # the scenario's own objects are left as they were
    check = AdmissionCheck.model_validate(by_name["trainyard-topology-racks"])
    assert check.spec.controller_name == TOPOLOGY_CHECK_CONTROLLER
    assert check.spec.parameters is not None
    assert (check.spec.parameters.kind, check.spec.parameters.name) == ("Topology", "racks")
    assert by_name["cq"]["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "trainyard-topology", "onFlavors": ["cpu"]},  # manifests/beside-kueue's check: hosts
        {"name": "trainyard-topology-racks", "onFlavors": ["gpu"]},
    ]
