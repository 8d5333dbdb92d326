"""The sandbox API server calls admission webhooks over HTTPS as kube-apiserver does.

A small webhook (aiohttp over TLS, its CA handed to the server through ``caBundle``) mutates,
denies and warns; the client is the real kubernetes-asyncio client. A webhook that is down fails
the request under ``failurePolicy: Fail`` and is skipped under ``Ignore``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from fakeapi.fixtures import FakeApi
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from webhooks.tls import self_signed, server_context

KUEUE = ("kueue.x-k8s.io", "v1beta2")
SERVICE = ("hooks", "sandbox-hooks")  # namespace, name


class Hook:
    """An HTTPS admission webhook that answers from ``self.answer`` and records the reviews it gets."""

    def __init__(self) -> None:
        self.bundle = self_signed([f"{SERVICE[1]}.{SERVICE[0]}.svc", "127.0.0.1"])
        self.reviews: list[dict[str, Any]] = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def start(self, tmp: Any) -> None:
        app = web.Application()
        app.router.add_post("/mutate", self._admit)
        app.router.add_post("/validate", self._admit)
        app.router.add_post("/slow", self._slow)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2, handler_cancellation=True)
        await self.runner.setup()
        files = self.bundle.write(tmp)
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=server_context(files))
        await site.start()
        self.port = int(self.runner.addresses[0][1])

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    async def _slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(3)
        return await self._admit(request)

    async def _admit(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        obj = review["request"]["object"] or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
        if labels.get("verdict") == "deny":
            response = {**response, "allowed": False, "status": {"code": 403, "message": "queue names are reserved"}}
        elif request.path == "/mutate" and review["request"]["operation"] == "CREATE":
            patch = [{"op": "add", "path": "/metadata/annotations", "value": {"mutated-by": "hook"}}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
            response["warnings"] = ["spec.stopPolicy is deprecated"]
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})


def configuration(kind: str, hook: Hook, *, failure_policy: str = "Fail", port: int = 443) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": f"test-{kind.lower()}"},
        "webhooks": [
            {
                "name": f"{kind.lower()}.queues.test",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": failure_policy,
                "timeoutSeconds": 2,
                "clientConfig": {
                    "service": {
                        "namespace": SERVICE[0],
                        "name": SERVICE[1],
                        "path": f"/{kind.lower()[:-3]}e",
                        "port": port,
                    },
                    "caBundle": base64.b64encode(hook.bundle.ca.cert_pem).decode(),
                },
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
                    ]
                },
                "rules": [
                    {
                        "apiGroups": ["kueue.x-k8s.io"],
                        "apiVersions": ["v1beta2"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["localqueues"],
                        "scope": "Namespaced",
                    }
                ],
            }
        ],
    }


def local_queue(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"clusterQueue": "team-a"},
    }


@pytest.fixture
async def hook(fake_api: FakeApi, tmp_path: Any) -> AsyncIterator[Hook]:
    started = Hook()
    await started.start(tmp_path)
    fake_api.server.admission.services[(SERVICE[0], SERVICE[1], 443)] = f"127.0.0.1:{started.port}"
    try:
        yield started
    finally:
        await started.stop()


async def test_mutating_webhook_patch_is_applied_and_warning_returned(
    fake_api: FakeApi, hook: Hook, kube_client: client.ApiClient
) -> None:
    fake_api.server.seed(configuration("Mutating", hook))
    api = client.CustomObjectsApi(kube_client)
    created, _, headers = await api.create_namespaced_custom_object_with_http_info(
        *KUEUE, "default", "localqueues", local_queue("team-a")
    )
    assert created["metadata"]["annotations"] == {"mutated-by": "hook"}
    stored = fake_api.store.get(fake_api.server.type_of("kueue.x-k8s.io/v1beta2", "LocalQueue"), "default", "team-a")
    assert stored["metadata"]["annotations"] == {"mutated-by": "hook"}
    assert headers.get("Warning") == '299 - "spec.stopPolicy is deprecated"'
    (review,) = hook.reviews
    request = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    assert request["operation"] == "CREATE"
    assert request["resource"] == {"group": "kueue.x-k8s.io", "version": "v1beta2", "resource": "localqueues"}
    assert request["namespace"] == "default"
    assert request["oldObject"] is None


async def test_denial_reaches_the_client_as_the_real_server_words_it(
    fake_api: FakeApi, hook: Hook, kube_client: client.ApiClient
) -> None:
    fake_api.server.seed(configuration("Validating", hook))
    api = client.CustomObjectsApi(kube_client)
    with pytest.raises(ApiException) as raised:
        await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("x", verdict="deny"))
    assert raised.value.status == 403
    status = json.loads(raised.value.body or b"{}")
    assert status["kind"] == "Status"
    assert status["status"] == "Failure"
    assert (
        status["message"] == 'admission webhook "validating.queues.test" denied the request: queue names are reserved'
    )
    # nothing was stored; an allowed update goes through and the webhook sees the old object
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("ok"))
    patched = await api.patch_namespaced_custom_object(
        *KUEUE,
        "default",
        "localqueues",
        "ok",
        {"metadata": {"labels": {"team": "a"}}},
        _content_type="application/merge-patch+json",
    )
    assert patched["metadata"]["labels"] == {"team": "a"}
    update = hook.reviews[-1]["request"]
    assert update["operation"] == "UPDATE"
    assert update["oldObject"]["metadata"]["name"] == "ok"
    # the namespaceSelector leaves kube-system alone
    calls = len(hook.reviews)
    await api.create_namespaced_custom_object(
        *KUEUE, "kube-system", "localqueues", local_queue("y", "kube-system", verdict="deny")
    )
    assert len(hook.reviews) == calls


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
async def test_webhook_down_follows_failure_policy(
    fake_api: FakeApi, hook: Hook, kube_client: client.ApiClient, policy: str
) -> None:
    fake_api.server.admission.services[(SERVICE[0], SERVICE[1], 443)] = f"127.0.0.1:{_closed_port()}"
    fake_api.server.seed(configuration("Validating", hook, failure_policy=policy))
    api = client.CustomObjectsApi(kube_client)
    if policy == "Ignore":
        created = await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
        assert created["metadata"]["name"] == "q"
        assert fake_api.server.admission.calls[-1].ignored
        return
    with pytest.raises(ApiException) as raised:
        await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
    assert raised.value.status == 500
    message = json.loads(raised.value.body or b"{}")["message"]
    assert message.startswith('Internal error occurred: failed calling webhook "validating.queues.test": ')
    assert "failed to call webhook" in message


async def test_untrusted_certificate_is_a_failed_call(
    fake_api: FakeApi, hook: Hook, kube_client: client.ApiClient
) -> None:
    document = configuration("Validating", hook)
    other = self_signed(["127.0.0.1"])  # a CA that did not sign the webhook's certificate
    document["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(other.ca.cert_pem).decode()
    fake_api.server.seed(document)
    api = client.CustomObjectsApi(kube_client)
    with pytest.raises(ApiException) as raised:
        await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
    assert raised.value.status == 500
    assert "certificate" in json.loads(raised.value.body or b"{}")["message"].lower()
    assert hook.reviews == []


async def test_a_webhook_slower_than_timeout_seconds_is_a_failed_call(
    fake_api: FakeApi, hook: Hook, kube_client: client.ApiClient
) -> None:
    document = configuration("Validating", hook)
    document["webhooks"][0]["timeoutSeconds"] = 1
    document["webhooks"][0]["clientConfig"]["service"]["path"] = "/slow"
    fake_api.server.seed(document)
    api = client.CustomObjectsApi(kube_client)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ApiException) as raised:
        await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
    assert loop.time() - started < 2.5, "the call is cut at timeoutSeconds, not when the webhook answers"
    assert raised.value.status == 500
    assert "context deadline exceeded" in json.loads(raised.value.body or b"{}")["message"]


def test_configurations_the_real_server_would_refuse_are_named() -> None:
    from sandbox.apiserver.webhook_config import WebhookConfigError, parse_webhooks

    hook = Hook()
    document = configuration("Validating", hook)
    document["webhooks"][0]["admissionReviewVersions"] = ["v1beta1"]
    with pytest.raises(
        WebhookConfigError, match=re.escape("webhook validating.queues.test: admissionReviewVersions must")
    ):
        parse_webhooks("Validating", document)
    document = configuration("Validating", hook)
    document["webhooks"][0]["failurePolicy"] = "Sometimes"
    with pytest.raises(WebhookConfigError, match="failurePolicy must be Fail or Ignore"):
        parse_webhooks("Validating", document)
    document = configuration("Validating", hook)
    document["webhooks"][0]["clientConfig"]["caBundle"] = "not base64!"
    with pytest.raises(WebhookConfigError, match="caBundle is not base64"):
        parse_webhooks("Validating", document)


async def test_a_dry_run_is_refused_by_a_webhook_with_side_effects(
    fake_api: FakeApi, hook: Hook, kube_client: client.ApiClient
) -> None:
    document = configuration("Validating", hook)
    document["webhooks"][0]["sideEffects"] = "Some"
    fake_api.server.seed(document)
    api = client.CustomObjectsApi(kube_client)
    with pytest.raises(ApiException) as raised:
        await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"), dry_run="All")
    assert raised.value.status == 400
    assert "does not support dry run" in json.loads(raised.value.body or b"{}")["message"]
    assert hook.reviews == []
