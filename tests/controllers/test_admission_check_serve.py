"""`trainyard serve --mode admission-check`: as a process against the embedded API server it runs
the topology check (the check turns Active, a gang Kueue reserved quota for is answered Ready),
and what the mode cannot run with is refused with the flag and the fix, exit 2, no traceback."""

from __future__ import annotations

import pytest
from fakeapi.fixtures import FakeApi
from queue_support import eventually
from test_admission_check import CHECK, NS, reserve, seed_cluster
from test_serve_controllers import trainyard

from scheduler.kube import KubeClient
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
