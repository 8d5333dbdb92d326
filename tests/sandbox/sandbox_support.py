"""Helpers for the sandbox tests: objects to create, a KubeClient on the fake server, polling."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from fakeapi.fixtures import FakeApi

from scheduler.kube import KubeClient


@contextlib.asynccontextmanager
async def kube(fake_api: FakeApi) -> AsyncIterator[KubeClient]:
    api_client = await fake_api.api_client()
    try:
        yield KubeClient(api_client, request_timeout=10.0)
    finally:
        await api_client.close()


async def eventually(check: Callable[[], Any], *, timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll ``check`` (sync or async) until it returns something truthy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = check()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


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


def jobset(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicatedJobs": []},
    }
