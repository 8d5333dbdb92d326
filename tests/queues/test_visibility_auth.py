"""The visibility API behind authentication and authorization, as an aggregated API server.

Over real HTTPS on loopback, read with the kubernetes-asyncio client: callers with a bearer token
(checked by TokenReview) or the aggregator's front-proxy client certificate with X-Remote-User /
X-Remote-Group; every request authorized by a SubjectAccessReview, both reviews answered by the
fake API server from its grants.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from sandbox.apiserver.reviews import Grant, Identity, ReviewingApiServer, Reviews
from tests.queues.support import NOW, fixture_state
from webhooks.objects import ObjectCache
from webhooks.server import create_app
from webhooks.tls import (
    Certificate,
    CertificateFiles,
    generate_ca,
    issue_client_certificate,
    require_client_ca,
    self_signed,
    server_context,
)
from webhooks.visibility import VISIBILITY_KEY, EngineSource, VisibilityService
from webhooks.visibility_auth import Authenticator, FrontProxy, Guard, subject_access_review, token_review

GROUP = "visibility.kueue.x-k8s.io"
PREFIX = f"/apis/{GROUP}/v1beta1"
CLUSTER_QUEUE = f"{PREFIX}/clusterqueues/team-a/pendingworkloads"
LOCAL_QUEUE = f"{PREFIX}/namespaces/team-a/localqueues/main/pendingworkloads"
PROXY_NAME = "front-proxy-client"


@dataclass
class Setup:
    url: str
    server_ca: Path
    reviews: Reviews
    proxy: dict[str, Path]  # CN -> directory with tls.crt/tls.key signed by the requestheader CA
    stranger: Path  # a client certificate from another CA


def _write(directory: Path, certificate: Certificate) -> Path:
    directory.mkdir(parents=True)
    (directory / "tls.crt").write_bytes(certificate.cert_pem)
    (directory / "tls.key").write_bytes(certificate.key_pem)
    return directory


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    reviews = Reviews(
        tokens={"alice-token": Identity("alice"), "bob-token": Identity("bob", ("team-a-users",))},
        grants=[
            Grant(
                "alice", ("get", "list"), (GROUP,), ("clusterqueues/pendingworkloads", "localqueues/pendingworkloads")
            ),
            Grant("group:team-a-users", ("get",), (GROUP,), ("localqueues/pendingworkloads",)),
            Grant("group:system:authenticated", ("get",), non_resource_urls=("/apis/*",)),
        ],
    )
    api = ReviewingApiServer(reviews)
    await api.start()
    api_client = await _api_client(api, tmp_path)
    requestheader_ca, requestheader_key = generate_ca("requestheader-ca")
    (tmp_path / "requestheader-ca.crt").write_bytes(requestheader_ca.cert_pem)
    proxy = {
        name: _write(tmp_path / name, issue_client_certificate(requestheader_ca, requestheader_key, name))
        for name in (PROXY_NAME, "someone-else")
    }
    other_ca, other_key = generate_ca("other-ca")
    stranger = _write(tmp_path / "stranger", issue_client_certificate(other_ca, other_key, PROXY_NAME))

    guard = Guard(
        Authenticator(token_review(api_client), FrontProxy(frozenset({PROXY_NAME}))),
        subject_access_review(api_client),
    )
    runner, url = await _serve_visibility(guard, tmp_path, tmp_path / "requestheader-ca.crt")
    try:
        yield Setup(url, CertificateFiles(tmp_path / "serving").ca, reviews, proxy, stranger)
    finally:
        await runner.cleanup()
        await api_client.close()
        await api.stop()


async def _serve_visibility(guard: Guard, tmp_path: Path, client_ca: Path | None = None) -> tuple[web.AppRunner, str]:
    """The visibility API over HTTPS on loopback behind ``guard``; its CA is tmp_path/serving/ca.crt."""
    serving = self_signed(["127.0.0.1"])
    context = server_context(serving.write(tmp_path / "serving"))
    if client_ca is not None:
        require_client_ca(context, client_ca)
    app = create_app(ObjectCache(), routes={})
    app[VISIBILITY_KEY] = VisibilityService(EngineSource(fixture_state().engine), guard, clock=lambda: NOW)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    return runner, f"https://127.0.0.1:{runner.addresses[0][1]}"


async def _api_client(api: ReviewingApiServer, tmp_path: Path) -> client.ApiClient:
    from kubernetes_asyncio import config

    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(api.write_kubeconfig(tmp_path / "kubeconfig")), client_configuration=configuration
    )
    return client.ApiClient(configuration)


async def _get(setup: Setup, path: str, *, token: str | None = None, cert: Path | None = None, **headers: str) -> Any:
    configuration = client.Configuration(host=setup.url)
    configuration.ssl_ca_cert = str(setup.server_ca)
    auth: list[str] = []
    if token is not None:
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        auth = ["BearerToken"]
    if cert is not None:
        configuration.cert_file = str(cert / "tls.crt")
        configuration.key_file = str(cert / "tls.key")
    async with client.ApiClient(configuration) as api:
        return await api.call_api(
            path,
            "GET",
            header_params={"Accept": "application/json", **headers},
            response_types_map={200: "object"},
            auth_settings=auth,
            _return_http_data_only=True,
        )


async def _refused(setup: Setup, path: str, **kwargs: Any) -> ApiException:
    with pytest.raises(ApiException) as refused:
        await _get(setup, path, **kwargs)
    return refused.value


async def test_a_bearer_token_is_reviewed_and_the_access_checked(setup: Setup) -> None:
    answer = await _get(setup, CLUSTER_QUEUE, token="alice-token")
    assert [item["metadata"]["name"] for item in answer["items"]] == ["a-first", "a-big", "a-other"]
    token_reviews = [body for body in setup.reviews.asked if body["kind"] == "TokenReview"]
    assert token_reviews[-1]["spec"] == {"token": "alice-token"}
    access = [body["spec"] for body in setup.reviews.asked if body["kind"] == "SubjectAccessReview"][-1]
    assert access["user"] == "alice"
    assert access["resourceAttributes"] == {
        "group": GROUP,
        "version": "v1beta1",
        "resource": "clusterqueues",
        "subresource": "pendingworkloads",
        "name": "team-a",
        "namespace": "",
        "verb": "get",
    }


async def test_a_user_without_the_grant_is_forbidden_in_the_api_servers_words(setup: Setup) -> None:
    refused = await _refused(setup, CLUSTER_QUEUE, token="bob-token")
    assert refused.status == 403
    assert (
        'clusterqueues.visibility.kueue.x-k8s.io \\"team-a\\" is forbidden: User \\"bob\\" cannot get resource '
        '\\"clusterqueues/pendingworkloads\\" in API group \\"visibility.kueue.x-k8s.io\\" at the cluster scope'
    ) in str(refused.body)
    # bob's group may read its own LocalQueue
    answer = await _get(setup, LOCAL_QUEUE, token="bob-token")
    assert [item["positionInLocalQueue"] for item in answer["items"]] == [0, 1]


async def test_unknown_or_missing_tokens_are_unauthorized(setup: Setup) -> None:
    assert (await _refused(setup, CLUSTER_QUEUE, token="forged")).status == 401
    assert (await _refused(setup, CLUSTER_QUEUE)).status == 401


async def test_the_front_proxy_names_the_user_and_groups(setup: Setup) -> None:
    proxy = setup.proxy[PROXY_NAME]
    answer = await _get(setup, CLUSTER_QUEUE, cert=proxy, **{"X-Remote-User": "alice"})
    assert len(answer["items"]) == 3
    carol = {"X-Remote-User": "carol", "X-Remote-Group": "team-a-users"}
    assert len((await _get(setup, LOCAL_QUEUE, cert=proxy, **carol))["items"]) == 2
    assert (await _refused(setup, CLUSTER_QUEUE, cert=proxy, **carol)).status == 403
    access = [body["spec"] for body in setup.reviews.asked if body["kind"] == "SubjectAccessReview"][-1]
    assert (access["user"], access["groups"]) == ("carol", ["team-a-users"])
    # the aggregator's requests carry no bearer token: no TokenReview was needed
    assert not any(body["kind"] == "TokenReview" for body in setup.reviews.asked)


async def test_remote_user_headers_are_not_believed_without_the_proxy_certificate(setup: Setup) -> None:
    assert (await _refused(setup, CLUSTER_QUEUE, **{"X-Remote-User": "alice"})).status == 401
    # a token for bob with a header claiming alice: the token decides
    assert (await _refused(setup, CLUSTER_QUEUE, token="bob-token", **{"X-Remote-User": "alice"})).status == 403


async def test_a_certificate_not_in_the_allowed_names_is_unauthorized(setup: Setup) -> None:
    refused = await _refused(setup, CLUSTER_QUEUE, cert=setup.proxy["someone-else"], **{"X-Remote-User": "alice"})
    assert refused.status == 401
    assert "requestheader allowed names" in str(refused.body)


async def test_a_certificate_from_another_ca_fails_the_handshake(setup: Setup) -> None:
    with pytest.raises((aiohttp.ClientError, ssl.SSLError)):
        await _get(setup, CLUSTER_QUEUE, cert=setup.stranger, **{"X-Remote-User": "alice"})


async def test_discovery_is_a_non_resource_url(setup: Setup) -> None:
    answer = await _get(setup, PREFIX, token="bob-token")
    assert answer["groupVersion"] == f"{GROUP}/v1beta1"
    access = [body["spec"] for body in setup.reviews.asked if body["kind"] == "SubjectAccessReview"][-1]
    assert access["nonResourceAttributes"] == {"path": PREFIX, "verb": "get"}


async def test_an_unreachable_api_server_is_503_and_its_address_stays_private(tmp_path: Path) -> None:
    api = ReviewingApiServer(Reviews(tokens={"alice-token": Identity("alice")}))
    await api.start()
    api_client = await _api_client(api, tmp_path)
    await api.stop()  # TokenReview and SubjectAccessReview can no longer be asked
    guard = Guard(Authenticator(token_review(api_client)), subject_access_review(api_client))
    runner, url = await _serve_visibility(guard, tmp_path)
    try:
        unreachable = Setup(url, CertificateFiles(tmp_path / "serving").ca, Reviews(), {}, tmp_path)
        refused = await _refused(unreachable, CLUSTER_QUEUE, token="alice-token")
    finally:
        await runner.cleanup()
        await api_client.close()
    assert refused.status == 503
    body = json.loads(refused.body)
    assert body["reason"] == "ServiceUnavailable"
    assert "try again" in body["message"]
    assert str(api.port) not in str(refused.body)
    assert "127.0.0.1" not in str(refused.body)
