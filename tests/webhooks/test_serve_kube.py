"""`trainyard serve webhook --kubeconfig`: the webhook's cache fed by informers from a (fake) cluster.

The fake API server runs in the test; the webhook runs as a real process that reaches it over
HTTP with the kubeconfig, and is asked over HTTPS with real AdmissionReviews. Changes made in the
cluster change the webhook's answers.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from builders import LocalQueueBuilder, trainjob
from fakeapi.fixtures import FakeApi, fake_api
from webhook_support import OBJECTS, apply_patch, review

from tests.eventually import eventually
from webhooks.tls import CertificateFiles, SelfSignedBundle, client_context

__all__ = ["fake_api"]

QUEUE = "kueue.x-k8s.io/queue-name"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed_fixture_objects(fake: FakeApi) -> int:
    """The webhook tests' objects, created in the fake cluster (Namespaces first)."""
    documents = [d for path in sorted(OBJECTS.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]
    documents.sort(key=lambda d: d["kind"] != "Namespace")
    for document in documents:
        fake.server.seed(document)
    return len(documents)


ONE_GPU = {"cpu": "2", "nvidia.com/gpu": "1"}


class RunningWebhook:
    def __init__(self, process: asyncio.subprocess.Process, port: int, session: aiohttp.ClientSession) -> None:
        self.process = process
        self.url = f"https://localhost:{port}"
        self.session = session

    async def readyz(self) -> tuple[int, str] | None:
        try:
            async with self.session.get(self.url + "/readyz") as reply:
                return reply.status, await reply.text()
        except aiohttp.ClientConnectionError:
            return None

    async def admit(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        body = review(obj)
        async with self.session.post(self.url + path, json=body) as reply:
            assert reply.status == 200
            document = await reply.json()
        response: dict[str, Any] = document["response"]
        assert response["uid"] == body["request"]["uid"]
        return response

    async def queue_defaulted(self, namespace: str) -> str | None:
        job = trainjob("mnist", namespace, requests=ONE_GPU)
        patched = apply_patch(job, await self.admit("/mutate/trainjobs", job))
        labels: dict[str, str] = patched["metadata"].get("labels") or {}
        return labels.get(QUEUE)


@pytest.fixture
async def webhook_on_fake_cluster(
    fake_api: FakeApi, tls_files: CertificateFiles, tls_bundle: SelfSignedBundle
) -> AsyncIterator[RunningWebhook]:
    port = _free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "trainyard",
        "serve",
        "webhook",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--tls-cert-dir",
        str(tls_files.directory),
        "--kubeconfig",
        str(fake_api.kubeconfig),
        stderr=asyncio.subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_context(tls_bundle.ca.cert_pem)))
    try:
        yield RunningWebhook(process, port, session)
    finally:
        await session.close()
        if process.returncode is None:
            process.terminate()
        _, stderr = await asyncio.wait_for(process.communicate(), 15)
        assert process.returncode == 0, stderr.decode()
        assert b"shutting down" in stderr


async def test_webhook_answers_from_the_cluster_and_follows_its_changes(
    fake_api: FakeApi, webhook_on_fake_cluster: RunningWebhook
) -> None:
    webhook = webhook_on_fake_cluster
    seed_fixture_objects(fake_api)
    # Keep one kind from listing, to see that readiness waits for every kind.
    fake_api.faults.fail("list", "/clustertrainingruntimes", code=500, times=1000)
    await eventually(lambda: _async(len(fake_api.faults.failed) > 0), "the informers to try listing")
    status = await eventually(webhook.readyz, "the webhook to listen")
    assert status[0] == 503
    assert "objects_loaded" in status[1]
    fake_api.faults.clear()
    assert await eventually(lambda: _ready(webhook), "the webhook to be ready") == (200, "ok")

    # team-a has a LocalQueue named default in the cluster: the queue is defaulted
    assert await webhook.queue_defaulted("team-a") == "default"
    assert await webhook.queue_defaulted("team-b") is None  # team-b's queue is called "training"
    validated = await webhook.admit(
        "/validate/trainjobs", trainjob("mnist", "team-a", requests=ONE_GPU, queue="default")
    )
    assert validated["allowed"] is True, validated

    # Changes in the cluster change the answers.
    localqueues = fake_api.server.type_of("kueue.x-k8s.io/v1beta2", "LocalQueue")
    fake_api.store.delete(localqueues, "team-a", "default")
    await eventually(lambda: _is_none(webhook.queue_defaulted("team-a")), "the deleted queue to stop defaulting")
    refused = await webhook.admit("/validate/trainjobs", trainjob("mnist", "team-a", requests=ONE_GPU, queue="default"))
    assert refused["allowed"] is False
    assert "LocalQueue 'default' does not exist" in refused["status"]["message"]

    fake_api.server.seed(LocalQueueBuilder("default", "team-b").cluster_queue("team-b-cq").doc())
    assert await eventually(lambda: webhook.queue_defaulted("team-b"), "the new queue to default") == "default"

    # A dropped watch and an expired revision do not lose changes either.
    fake_api.faults.expire_watches()
    fake_api.store.delete(localqueues, "team-b", "default")
    await eventually(lambda: _is_none(webhook.queue_defaulted("team-b")), "the change made during a 410")


async def _async(value: Any) -> Any:
    return value


async def _ready(webhook: RunningWebhook) -> tuple[int, str] | None:
    status = await webhook.readyz()
    return status if status is not None and status[0] == 200 else None


async def _is_none(result: Any) -> bool:
    return (await result) is None


def test_a_missing_kubeconfig_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trainyard.cli.main import main

    code = main(["serve", "--self-signed", "--port", "0", "--kubeconfig", str(tmp_path / "nope")])
    assert code == 2
    assert f"kubeconfig {tmp_path / 'nope'} does not exist" in capsys.readouterr().err


def test_context_needs_a_kubeconfig(capsys: pytest.CaptureFixture[str]) -> None:
    from trainyard.cli.main import main

    assert main(["serve", "--self-signed", "--port", "0", "--context", "prod"]) == 2
    assert "--context needs --kubeconfig" in capsys.readouterr().err


def test_objects_and_kubeconfig_are_exclusive(tmp_path: Path) -> None:
    from trainyard.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["serve", "--self-signed", "--objects", str(OBJECTS), "--kubeconfig", str(tmp_path / "k")])
    assert exited.value.code == 2


def test_manifests_let_the_deployment_watch_every_cached_kind() -> None:
    from scheduler.kube import kind_named
    from webhooks.objects import CACHED_KINDS

    manifests = Path(__file__).resolve().parents[2] / "manifests" / "webhook"
    role = next(d for d in yaml.safe_load_all((manifests / "rbac.yaml").read_text()) if d["kind"] == "ClusterRole")
    granted = {
        (group, resource)
        for rule in role["rules"]
        if {"list", "watch"} <= set(rule["verbs"])
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    for kind in [*CACHED_KINDS, "Namespace"]:
        k = kind_named(kind)
        assert (k.group, k.plural) in granted, f"rbac.yaml must grant list and watch on {k.plural}.{k.group}"
    deployment = next(
        d for d in yaml.safe_load_all((manifests / "deployment.yaml").read_text()) if d["kind"] == "Deployment"
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:2] == ["serve", "webhook"]
    assert "--objects" not in container["args"], "in a cluster the webhook is fed by its informers"
    assert "--kubeconfig" not in container["args"], "in a Pod the service account is used"
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "trainyard-webhook"
