"""`trainyard serve` with the controllers serves the visibility API, guarded as an aggregated API server.

A real process against the fake API server, which publishes the aggregator's front-proxy CA in
kube-system/extension-apiserver-authentication (as kube-apiserver does) and answers TokenReviews
and SubjectAccessReviews. The front proxy's certificate and a bearer token both reach the
pending workloads; a user without the grant is forbidden.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from sandbox.apiserver.reviews import Grant, Identity, ReviewingApiServer, Reviews
from tests.builders import ClusterQueueBuilder, ResourceFlavorBuilder
from webhooks.tls import Certificate, generate_ca, issue_client_certificate

ROOT = Path(__file__).resolve().parents[2]
GROUP = "visibility.kueue.x-k8s.io"
PENDING = f"/apis/{GROUP}/v1beta1/clusterqueues/team-a/pendingworkloads"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _seed(api: ReviewingApiServer, proxy_ca: Certificate) -> None:
    data = {
        "requestheader-client-ca-file": proxy_ca.cert_pem.decode(),
        "requestheader-allowed-names": json.dumps(["front-proxy-client"]),
        "requestheader-username-headers": json.dumps(["X-Remote-User"]),
        "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
        "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
    }
    api.seed(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
            "data": data,
        }
    )
    api.seed(ResourceFlavorBuilder("default").doc())
    api.seed(ClusterQueueBuilder("team-a").quota("default", "cpu", 4).doc())


@contextlib.asynccontextmanager
async def serving(kubeconfig: Path, port: int) -> AsyncIterator[None]:
    args = ["serve", "--self-signed", "--host", "127.0.0.1", "--port", str(port), "--kubeconfig", str(kubeconfig)]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trainyard", *args, "--no-leader-elect", stderr=asyncio.subprocess.PIPE, cwd=ROOT
    )
    try:
        yield
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
        assert process.returncode == 0, stderr.decode()
        assert "visibility API on the same port, for the aggregator's front proxy" in stderr.decode()


async def _get(http: aiohttp.ClientSession, url: str, context: ssl.SSLContext, **headers: str) -> tuple[int, Any]:
    async with http.get(url, ssl=context, headers=headers) as answer:
        return answer.status, await answer.json(content_type=None)


@pytest.mark.slow
async def test_serve_exposes_the_visibility_api_to_the_front_proxy_and_tokens(tmp_path: Path) -> None:
    reviews = Reviews(
        tokens={"alice-token": Identity("alice"), "bob-token": Identity("bob")},
        grants=[Grant("alice", ("get",), (GROUP,), ("clusterqueues/pendingworkloads",))],
    )
    proxy_ca, proxy_key = generate_ca("front-proxy-ca")
    proxy_cert = issue_client_certificate(proxy_ca, proxy_key, "front-proxy-client")
    (tmp_path / "proxy.crt").write_bytes(proxy_cert.cert_pem)
    (tmp_path / "proxy.key").write_bytes(proxy_cert.key_pem)
    proxy = ssl.create_default_context()
    proxy.check_hostname = False
    proxy.verify_mode = ssl.CERT_NONE  # the self-signed serving CA is not what this test is about
    plain = ssl.create_default_context()
    plain.check_hostname, plain.verify_mode = False, ssl.CERT_NONE
    proxy.load_cert_chain(tmp_path / "proxy.crt", tmp_path / "proxy.key")
    url = f"https://127.0.0.1:{(port := _free_port())}{PENDING}"
    async with ReviewingApiServer(reviews) as api:
        _seed(api, proxy_ca)
        async with serving(api.write_kubeconfig(tmp_path / "kubeconfig"), port), aiohttp.ClientSession() as http:
            for _ in range(300):  # until the process listens and its informers have seen team-a
                with contextlib.suppress(aiohttp.ClientError):
                    status, body = await _get(http, url, proxy, **{"X-Remote-User": "alice"})
                    if status == 200:
                        break
                await asyncio.sleep(0.1)
            assert (status, body["kind"]) == (200, "PendingWorkloadsSummary"), body
            assert (await _get(http, url, plain, Authorization="Bearer alice-token"))[0] == 200
            status, body = await _get(http, url, plain, Authorization="Bearer bob-token")
            assert status == 403
            assert 'User "bob" cannot get resource' in body["message"]
            assert (await _get(http, url, plain))[0] == 401
            assert (await _get(http, url, plain, **{"X-Remote-User": "alice"}))[0] == 401
    asked = {(body["kind"], (body["spec"].get("user") or "")) for body in reviews.asked}
    assert ("SubjectAccessReview", "alice") in asked
    assert ("TokenReview", "") in asked
