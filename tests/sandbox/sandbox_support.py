"""Helpers for the sandbox tests: objects to create, a KubeClient on the fake server, polling."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from builders import node as build_node
from fakeapi.fixtures import FakeApi

from scheduler.kube import KubeClient

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


@dataclass
class Answer:
    """A raw answer: what kube-apiserver's clients see (status, body, Warning headers' texts)."""

    status: int
    body: Any
    warnings: list[str]


class RawClient:
    """Raw HTTP requests to the fake server with its token: no client library between the test and
    the server's exact answer."""

    def __init__(self, fake_api: FakeApi, session: aiohttp.ClientSession) -> None:
        self.url = fake_api.url
        self.session = session
        self.headers = {"Authorization": f"Bearer {fake_api.server.token}"}

    async def send(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Answer:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = content_type
        async with self.session.request(method, self.url + path, data=data, headers=headers) as response:
            text = await response.text()
            warnings = [_warning_text(w) for w in response.headers.getall("Warning", [])]
            return Answer(response.status, json.loads(text) if text else None, warnings)

    async def send_stream(self, method: str, path: str) -> list[Any]:
        """A watch's events, read until the stream ends (give it a timeoutSeconds)."""
        async with self.session.request(method, self.url + path, headers=self.headers) as response:
            return [json.loads(line) for line in (await response.text()).splitlines() if line.strip()]


def _warning_text(header: str) -> str:
    """``299 - "text"`` (quotes and backslashes escaped) back to the text."""
    return header.removeprefix('299 - "').removesuffix('"').replace('\\"', '"').replace("\\\\", "\\")


@contextlib.asynccontextmanager
async def raw(fake_api: FakeApi) -> AsyncIterator[RawClient]:
    async with aiohttp.ClientSession() as session:
        yield RawClient(fake_api, session)


@contextlib.asynccontextmanager
async def kube(fake_api: FakeApi) -> AsyncIterator[KubeClient]:
    api_client = await fake_api.api_client()
    try:
        yield KubeClient(api_client, request_timeout=10.0)
    finally:
        await api_client.close()


def owner_ref(owner: dict[str, Any], *, controller: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def config_map(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"k": name},
    }


def pod(
    name: str, namespace: str = "default", *, owners: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        metadata["ownerReferences"] = owners
    body: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}


def job(name: str, namespace: str = "default", *, owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        metadata["ownerReferences"] = owners
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completionMode": "Indexed",
            "completions": 2,
            "parallelism": 2,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}},
        },
    }


def node(name: str, *, cpu: str = "8", pods: str = "110", **fields: Any) -> dict[str, Any]:
    """A Ready node as a kubelet registers it (its hostname label, 32Gi of memory); ``fields`` as for
    ``tests.builders.node`` (labels, taints, ready, unschedulable)."""
    return build_node(name, hostname=True, cpu=cpu, memory="32Gi", pods=pods, **fields)


def condition_of(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for found in ((obj or {}).get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return None
