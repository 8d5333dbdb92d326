"""The dashboard as the commands start it: beside `trainyard serve`'s controllers, and in
`trainyard sandbox up`, each printing its address and serving the controllers' queues."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from sandbox.embedded import Sandbox

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _queues_page(url: str) -> str:
    """The Queues page once it lists the sandbox's ClusterQueues (the informers have listed)."""
    async with aiohttp.ClientSession() as http:
        for _ in range(300):
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(f"{url}/queues") as answer:
                    text = await answer.text()
                    if answer.status == 200 and 'data-cq="team-d"' in text:
                        return text
            await asyncio.sleep(0.1)
    raise AssertionError(f"{url}/queues never listed the ClusterQueues")


async def test_serve_serves_the_dashboard_from_its_controllers(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    port, dashboard = _free_port(), _free_port()
    async with Sandbox(kubeconfig_out=kubeconfig, controllers=False, standins=False, kwok=False, webhook=False):
        args = ["serve", "--self-signed", "--host", "127.0.0.1", "--port", str(port), "--kubeconfig", str(kubeconfig)]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "trainyard",
            *args,
            "--no-leader-elect",
            "--dashboard-port",
            str(dashboard),
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
        )
        try:
            page = await _queues_page(f"http://127.0.0.1:{dashboard}")
            assert "0 admitted" in page.replace("</b>", "")
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
    assert f"trainyard serve: dashboard on http://127.0.0.1:{dashboard}" in stderr.decode()


def test_sandbox_up_starts_the_dashboard_and_prints_its_address(tmp_path: Path) -> None:
    port = _free_port()
    command = [sys.executable, "-m", "trainyard", "sandbox", "up", "--kubeconfig-out", str(tmp_path / "kc")]
    process = subprocess.Popen(
        [*command, "--dashboard-port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip(), "the sandbox came up"
        page = asyncio.run(_queues_page(f"http://127.0.0.1:{port}"))
        assert 'data-cq="team-a"' in page
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert f"trainyard sandbox: dashboard on http://127.0.0.1:{port}" in stderr
    assert "Traceback" not in stderr
