"""Helpers for the webhook tests: AdmissionReview bodies and a real server on loopback HTTPS.

The client trusts only the CA the test session generated and checks the server's name, as the
API server does.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.builders import PRIORITY_CLASS_LABEL, QUEUE_LABEL, trainjob
from webhooks.handlers import Handler
from webhooks.objects import ObjectCache
from webhooks.review import decode_patch
from webhooks.review_runner import ReviewRunner
from webhooks.server import ConnectionLimits, WebhookServer
from webhooks.tls import CertificateFiles, client_context, server_context

FIXTURES = Path(__file__).parent / "fixtures"
OBJECTS = FIXTURES / "objects"
QUEUE = QUEUE_LABEL
PRIORITY = PRIORITY_CLASS_LABEL
MNIST_REQUESTS = {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"}


def mnist_job(
    name: str = "mnist", namespace: str = "team-a", *, trainer: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """A TrainJob as kubeflow/trainer's examples write it: two nodes of two GPUs; a ``trainer`` replaces theirs."""
    if trainer is not None:
        return trainjob(name, namespace, nodes=None, trainer=trainer, **fields)
    return trainjob(name, namespace, nodes=2, requests=MNIST_REQUESTS, **fields)


def running(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` resumed: what Kueue writes once it admits it."""
    job = copy.deepcopy(job)
    job["spec"]["suspend"] = False
    return job


def review(
    obj: Mapping[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    uid: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview v1 request as the API server sends it."""
    source = obj if obj is not None else old
    assert source is not None
    api_version = str(source.get("apiVersion", "v1"))
    group, _, version = api_version.rpartition("/")
    metadata = source.get("metadata") or {}
    kind = str(source.get("kind"))
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid or str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": plural},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "name": metadata.get("name", ""),
            "namespace": metadata.get("namespace"),
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": copy.deepcopy(dict(obj)) if obj is not None else None,
            "oldObject": copy.deepcopy(dict(old)) if old is not None else None,
            "dryRun": dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


@dataclass
class Webhook:
    """A running server and a keep-alive client that verifies its certificate."""

    server: WebhookServer
    session: aiohttp.ClientSession

    @property
    def url(self) -> str:
        return f"https://localhost:{self.server.port}"

    async def post(self, path: str, body: Any) -> tuple[int, Any]:
        async with self.session.post(self.url + path, json=body) as response:
            document = await response.json(content_type=None)
            return response.status, document

    async def post_raw(self, path: str, data: bytes) -> tuple[int, str]:
        async with self.session.post(
            self.url + path, data=data, headers={"Content-Type": "application/json"}
        ) as response:
            return response.status, await response.text()

    async def admit(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a review, check the envelope and uid, return ``response``."""
        status, document = await self.post(path, body)
        assert status == 200, document
        assert document["apiVersion"] == "admission.k8s.io/v1"
        assert document["kind"] == "AdmissionReview"
        response: dict[str, Any] = document["response"]
        assert response["uid"] == body["request"]["uid"]
        if not response["allowed"]:
            assert response["status"]["message"], "a denial must carry a message"
        return response

    async def get(self, path: str) -> tuple[int, str]:
        async with self.session.get(self.url + path) as response:
            return response.status, await response.text()


async def start_webhook(
    cache: ObjectCache,
    files: CertificateFiles,
    ca_pem: bytes,
    *,
    routes: Mapping[str, Handler] | None = None,
    max_body_bytes: int | None = None,
    runner: ReviewRunner | None = None,
    limits: ConnectionLimits | None = None,
) -> Webhook:
    kwargs: dict[str, Any] = {} if max_body_bytes is None else {"max_body_bytes": max_body_bytes}
    if limits is not None:
        kwargs["limits"] = limits
    server = WebhookServer(
        cache,
        server_context(files),
        host="127.0.0.1",
        port=0,
        routes=routes,
        shutdown_timeout=1.0,
        runner=runner,
        **kwargs,
    )
    await server.start()
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_context(ca_pem), limit=4))
    return Webhook(server, session)


async def stop_webhook(webhook: Webhook) -> None:
    await webhook.session.close()
    await webhook.server.stop()


def apply_patch(obj: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    import jsonpatch

    operations = decode_patch(dict(response))
    if operations:
        assert response["patchType"] == "JSONPatch"
    patched: dict[str, Any] = jsonpatch.apply_patch(dict(obj), operations)
    return patched


def with_node_selector(
    job: dict[str, Any], selector: dict[str, str], *, manager: str, time: str | None = None
) -> dict[str, Any]:
    """A copy of ``job`` with one runtime patch: ``manager``'s node selector on the ``node`` replicated job."""
    job = copy.deepcopy(job)
    patch: dict[str, Any] = {
        "manager": manager,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": selector}}}}}
                    ]
                }
            }
        },
    }
    if time is not None:
        patch["time"] = time
    job["spec"]["runtimePatches"] = [patch]
    return job


def wide_trainjob(name: str, *, overrides: int, env: int, namespace: str = "team-a") -> dict[str, Any]:
    """A queued TrainJob with ``overrides`` podTemplateOverrides on its node job, each setting
    ``env`` variables of its own (the shape that once made a review quadratic)."""
    entries = [
        {
            "targetJobs": [{"name": "node"}],
            "spec": {
                "containers": [
                    {"name": "node", "env": [{"name": f"VAR_{i}_{j}", "value": "x" * 8} for j in range(env)]}
                ]
            },
        }
        for i in range(overrides)
    ]
    return trainjob(name, namespace, requests={"cpu": "1"}, queue="default", suspend=True, podTemplateOverrides=entries)
