"""``trainyard sandbox up`` as a user runs it: a process, a kubeconfig, kubectl-like reads, Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "trainyard", "sandbox", "up", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sandbox_up_serves_a_kubeconfig_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "sb.kubeconfig"
    process = _start("--kubeconfig-out", str(kubeconfig), "--speedup", "20")
    try:
        assert process.stdout is not None
        printed = process.stdout.readline().strip()  # blocks until the sandbox is up
        assert printed == str(kubeconfig.resolve()), process.stderr.read() if process.stderr else ""
        from kubernetes import client, config

        api_client = config.new_client_from_config(config_file=str(kubeconfig))
        try:
            nodes = client.CoreV1Api(api_client).list_node().items
            assert len(nodes) == 8
            assert all(n.metadata.annotations["kwok.x-k8s.io/node"] == "fake" for n in nodes)
            runtimes = client.CustomObjectsApi(api_client).list_cluster_custom_object(
                "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"
            )
            assert "torch-distributed" in {r["metadata"]["name"] for r in runtimes["items"]}
        finally:
            api_client.close()
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
        assert time.monotonic() - started < 15
        assert "trainyard sandbox: stopped" in stderr
        assert "Traceback" not in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "no-such-scenario"], "--scenario: no-such-scenario: no such scenario"),
        (["--speedup", "0"], "--speedup must be positive"),
        (["--kubeconfig-out", "/no/such/dir/kc"], "the directory /no/such/dir does not exist"),
    ],
)
def test_bad_input_is_one_clear_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from trainyard.cli.main import main

    assert main(["sandbox", "up", *args]) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("trainyard sandbox: ")
    assert message in stderr
    assert "Traceback" not in stderr
