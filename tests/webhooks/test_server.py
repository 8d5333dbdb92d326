"""The server over real HTTPS: bad input never 500s, health, readiness, metrics, dryRun, TLS reload."""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from builders import LocalQueueBuilder
from webhook_support import Webhook, review, start_webhook, stop_webhook

from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict
from webhooks.server import INTERNAL_ERROR, WebhookServer
from webhooks.tls import (
    CertificateFiles,
    CertificateReloader,
    SelfSignedBundle,
    client_context,
    self_signed,
    server_context,
)

LQ = LocalQueueBuilder("q", "team-a").cluster_queue("team-a-cq").doc()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b"{not json", "request body is not JSON", id="malformed-json"),
        pytest.param(b"", "request body is not JSON", id="empty-body"),
        pytest.param(b"[1, 2]", "must be a JSON object", id="json-array"),
        pytest.param(b'"review"', "must be a JSON object", id="json-string"),
        pytest.param(b"\xff\xfe\x00", "request body is not JSON", id="not-utf8"),
        pytest.param(
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}).encode(),
            "request.uid is missing",
            id="missing-uid",
        ),
        pytest.param(
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
            "request is missing",
            id="missing-request",
        ),
    ],
)
async def test_unreadable_bodies_get_400_with_a_message(webhook: Webhook, body: bytes, expected: str) -> None:
    status, text = await webhook.post_raw("/validate/kueue", body)
    assert status == 400
    assert expected in json.loads(text)["message"]


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        pytest.param(
            {"apiVersion": "admission.k8s.io/v1beta1"}, "expected apiVersion admission.k8s.io/v1", id="v1beta1"
        ),
        pytest.param({"kind": "TokenReview"}, "kind AdmissionReview", id="wrong-kind"),
        pytest.param({"request.operation": "PATCH"}, "request.operation must be one of", id="bad-operation"),
        pytest.param({"request.kind": "LocalQueue"}, "request.kind must be an object", id="kind-not-object"),
        pytest.param({"request.object": [1]}, "request.object must be an object", id="object-not-object"),
        pytest.param({"request.dryRun": "yes"}, "request.dryRun must be a boolean", id="dry-run-not-bool"),
    ],
)
async def test_malformed_reviews_with_a_uid_are_denied_with_a_message(
    webhook: Webhook, mutation: dict[str, Any], expected: str
) -> None:
    body = review(LQ)
    for key, value in mutation.items():
        if key.startswith("request."):
            body["request"][key.removeprefix("request.")] = value
        else:
            body[key] = value
    status, document = await webhook.post("/validate/kueue", body)
    assert status == 200
    response = document["response"]
    assert response["uid"] == body["request"]["uid"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert expected in response["status"]["message"]


async def test_oversized_body_is_413_and_the_server_keeps_serving(
    cache: ObjectCache, tls_files: CertificateFiles, tls_bundle: SelfSignedBundle
) -> None:
    webhook = await start_webhook(cache, tls_files, tls_bundle.ca.cert_pem, max_body_bytes=4096)
    try:
        big = review(LQ)
        big["request"]["object"]["metadata"]["annotations"] = {"padding": "x" * 8192}
        status, document = await webhook.post("/validate/kueue", big)
        assert status == 413
        assert "larger than this webhook accepts" in document["message"]
        response = await webhook.admit("/validate/kueue", review(LQ))
        assert response["allowed"] is True
    finally:
        await stop_webhook(webhook)


def _exploding(request: AdmissionRequest, cache: ObjectCache) -> Verdict:
    raise KeyError("boom")


async def test_a_failing_handler_becomes_a_denial_not_a_500(
    cache: ObjectCache, tls_files: CertificateFiles, tls_bundle: SelfSignedBundle, caplog: pytest.LogCaptureFixture
) -> None:
    webhook = await start_webhook(cache, tls_files, tls_bundle.ca.cert_pem, routes={"/validate/boom": _exploding})
    try:
        for _ in range(2):
            response = await webhook.admit("/validate/boom", review(LQ))
            assert response["allowed"] is False
            assert response["status"]["code"] == 500
            # the caller learns that the review failed, not how: the details are the log's
            assert response["status"]["message"] == INTERNAL_ERROR
        _, metrics = await webhook.get("/metrics")
        assert 'trainyard_webhook_requests_total{endpoint="/validate/boom",verdict="error"} 2.0' in metrics
    finally:
        await stop_webhook(webhook)
    failures = [record for record in caplog.records if "/validate/boom failed" in record.getMessage()]
    assert len(failures) == 2
    assert "KeyError: 'boom'" in failures[1].getMessage()
    # the traceback is logged once per kind of failure, not once per request
    assert [record.exc_info is not None for record in failures] == [True, False]


async def test_unknown_paths_and_methods_are_client_errors(webhook: Webhook) -> None:
    status, _ = await webhook.post_raw("/validate/nothing", b"{}")
    assert status == 404
    status, _ = await webhook.get("/validate/kueue")
    assert status == 405


async def test_health_and_readiness(webhook: Webhook, cache: ObjectCache) -> None:
    assert await webhook.get("/healthz") == (200, "ok")
    assert await webhook.get("/readyz") == (200, "ok")
    cache.loaded = False
    status, text = await webhook.get("/readyz")
    assert status == 503
    assert "objects_loaded" in text


async def test_metrics_count_requests_per_endpoint_and_verdict(webhook: Webhook) -> None:
    await webhook.admit("/validate/kueue", review(LQ))
    bad = json.loads(json.dumps(LQ))
    bad["spec"]["clusterQueue"] = "Not_Valid"
    await webhook.admit("/validate/kueue", review(bad))
    await webhook.admit("/validate/kueue", review(bad))
    await webhook.post_raw("/validate/kueue", b"nope")
    status, text = await webhook.get("/metrics")
    assert status == 200
    assert 'trainyard_webhook_requests_total{endpoint="/validate/kueue",verdict="allowed"} 1.0' in text
    assert 'trainyard_webhook_requests_total{endpoint="/validate/kueue",verdict="denied"} 2.0' in text
    assert 'trainyard_webhook_requests_total{endpoint="/validate/kueue",verdict="error"} 1.0' in text
    assert 'trainyard_webhook_request_duration_seconds_count{endpoint="/validate/kueue",verdict="denied"} 2.0' in text


async def test_dry_run_gets_the_same_answer_and_changes_nothing(webhook: Webhook, cache: ObjectCache) -> None:
    version = cache.version
    bad = json.loads(json.dumps(LQ))
    bad["spec"]["clusterQueue"] = ""
    real = await webhook.admit("/validate/kueue", review(bad))
    dry = await webhook.admit("/validate/kueue", review(bad, dry_run=True))
    assert real["allowed"] is dry["allowed"] is False
    assert real["status"] == dry["status"]
    assert cache.version == version
    assert cache.local_queue("team-a", "q") is None


def _client(ca_pem: bytes) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_context(ca_pem), force_close=True))


async def test_tls_files_are_reloaded_on_change_without_restart(tmp_path: Path, cache: ObjectCache) -> None:
    first = self_signed(["localhost"])
    files = first.write(tmp_path / "secret")
    context = server_context(files)
    reloader = CertificateReloader(context, files, interval=3600)
    server = WebhookServer(cache, context, host="127.0.0.1", port=0, reloader=reloader, shutdown_timeout=1.0)
    await server.start()
    url = f"https://localhost:{server.port}/healthz"
    try:
        async with _client(first.ca.cert_pem) as session, session.get(url) as response:
            assert response.status == 200
        assert reloader.check() is False  # nothing changed yet

        rotated = self_signed(["localhost"])  # a new CA too, so only the new chain verifies
        rotated.write(files.directory)
        assert reloader.check() is True
        assert reloader.reloads == 1
        async with _client(rotated.ca.cert_pem) as session, session.get(url) as response:
            assert response.status == 200
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            async with _client(first.ca.cert_pem) as session, session.get(url):
                pass
    finally:
        await server.stop()


async def test_a_half_written_rotation_keeps_the_old_chain(tmp_path: Path) -> None:
    first = self_signed(["localhost"])
    files = first.write(tmp_path / "secret")
    context = server_context(files)
    reloader = CertificateReloader(context, files)
    other = self_signed(["localhost"])
    files.cert.write_bytes(other.serving.cert_pem)  # new cert, old key: does not load
    assert reloader.check() is False
    assert reloader.reloads == 0
    files.key.write_bytes(other.serving.key_pem)
    assert reloader.check() is True


def test_missing_tls_files_are_a_clear_error(tmp_path: Path) -> None:
    from webhooks.tls import TLSError

    with pytest.raises(TLSError, match=r"tls\.crt does not exist"):
        server_context(CertificateFiles(tmp_path))


def test_self_signed_certificate_verifies_for_its_hosts(tls_bundle: SelfSignedBundle) -> None:
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(tls_bundle.serving.cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    context = client_context(tls_bundle.ca.cert_pem)
    assert context.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("path", "kind_object", "depth"),
    [
        pytest.param(
            "/validate/trainjobs",
            '{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"deep",'
            '"namespace":"team-a"},"spec":{"runtimeRef":{"name":"torch-distributed"},"bogus":%s}}',
            300,
            id="trainjob-300-deep",
        ),
        pytest.param(
            "/validate/trainjobs",
            '{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"deep",'
            '"namespace":"team-a","labels":{"kueue.x-k8s.io/queue-name":"default"}},'
            '"spec":{"runtimeRef":{"name":"torch-distributed"},"bogus":%s}}',
            900,
            id="queued-trainjob-900-deep",
        ),
    ],
)
async def test_an_object_nested_too_deep_is_refused_naming_where(
    webhook: Webhook, path: str, kind_object: str, depth: int
) -> None:
    nested = '{"x":' * depth + "{}" + "}" * depth
    body = (
        '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"deep-1",'
        '"kind":{"group":"g","version":"v","kind":"K"},"operation":"CREATE","namespace":"team-a",'
        '"name":"deep","object":%s}}' % (kind_object % nested)
    ).encode()
    status, text = await webhook.post_raw(path, body)
    assert status == 200
    response = json.loads(text)["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert response["status"]["reason"] == "BadRequest"
    message = response["status"]["message"]
    assert message.startswith("request.object nests maps and lists more than 100 levels deep (at spec.bogus.x.x.x")
    assert "remove or flatten that field" in message
