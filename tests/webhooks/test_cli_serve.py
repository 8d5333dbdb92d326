"""`trainyard serve webhook` as a real process: self-signed TLS, caBundle written, clean SIGTERM."""

from __future__ import annotations

import base64
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml
from webhook_support import OBJECTS

from trainyard.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_self_signed_writes_ca_bundle_and_stops_on_sigterm(tmp_path: Path) -> None:
    configurations = tmp_path / "webhook-configurations.yaml"
    shutil.copy(ROOT / "manifests" / "webhook" / "webhook-configurations.yaml", configurations)
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainyard",
            "serve",
            "webhook",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--self-signed",
            "--objects",
            str(OBJECTS),
            "--write-ca-bundle",
            str(configurations),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            documents = list(yaml.safe_load_all(configurations.read_text()))
            bundles = [hook["clientConfig"]["caBundle"] for doc in documents for hook in doc["webhooks"]]
            if (bundles and all(bundles)) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert len(bundles) == 4
        assert all(bundles)
        ca_pem = base64.b64decode(bundles[0]).decode()
        context = ssl.create_default_context(cadata=ca_pem)
        while True:
            try:
                with urllib.request.urlopen(f"https://localhost:{port}/readyz", context=context, timeout=2) as reply:
                    assert reply.read() == b"ok"
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=15)
        assert process.returncode == 0
        assert "shutting down" in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_serve_without_tls_choice_is_a_user_error(capsys: object) -> None:
    assert main(["serve", "webhook"]) == 2


def test_serve_with_missing_cert_dir_names_the_file(tmp_path: Path) -> None:
    assert main(["serve", "--tls-cert-dir", str(tmp_path), "--port", "0"]) == 2
