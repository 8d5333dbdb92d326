"""The sandbox API server's bearer token: drawn per run, checked in constant time, never a constant."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import yaml

from sandbox.apiserver import FakeApiServer


def _sandbox_up_token(kubeconfig: Path) -> str:
    """Run ``trainyard sandbox up`` until it is serving, stop it, and return its kubeconfig's token."""
    process = subprocess.Popen(
        [sys.executable, "-m", "trainyard", "sandbox", "up", "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        printed = process.stdout.readline().strip()  # the kubeconfig path, once the sandbox is up
        assert printed == str(kubeconfig.resolve()), process.stderr.read() if process.stderr else ""
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    (user,) = yaml.safe_load(kubeconfig.read_text())["users"]
    token = user["user"]["token"]
    assert isinstance(token, str)
    return token


def test_two_sandbox_runs_write_different_tokens(tmp_path: Path) -> None:
    first = _sandbox_up_token(tmp_path / "first.kubeconfig")
    second = _sandbox_up_token(tmp_path / "second.kubeconfig")
    assert first != second
    assert min(len(first), len(second)) >= 32  # secrets.token_urlsafe(32): 256 random bits
    assert (tmp_path / "first.kubeconfig").stat().st_mode & 0o077 == 0


async def test_only_the_servers_own_token_is_accepted() -> None:
    async with FakeApiServer() as server, FakeApiServer() as other:
        assert server.token is not None
        assert other.token is not None
        assert server.token != other.token
        forged = server.token[:-1] + ("A" if server.token[-1] != "A" else "B")  # same length, one character off
        async with aiohttp.ClientSession() as session:
            for token, expected in ((server.token, 200), (other.token, 401), (forged, 401), (None, 401)):
                headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
                async with session.get(f"{server.url}/api/v1/namespaces", headers=headers) as response:
                    assert response.status == expected, token
