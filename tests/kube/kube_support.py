"""Helpers for the adapter tests: a recording sink, a KubeClient on the fake server, polling."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from fakeapi.fixtures import FakeApi

from scheduler.kube import Informer, InformerSettings, KubeClient
from scheduler.kube.backoff import Backoff


def fast_settings(**overrides: Any) -> InformerSettings:
    values: dict[str, Any] = {
        "watch_timeout_seconds": 30,
        "inactivity_timeout": 30.0,
        "backoff": Backoff(initial=0.01, maximum=0.05),
    }
    values.update(overrides)
    return InformerSettings(**values)


@dataclass
class RecordingSink:
    """An ObjectSink that keeps the objects and a log of every call."""

    objects: dict[tuple[str, str | None, str], dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str, str | None, str, str]] = field(default_factory=list)  # op, kind, ns, name, rv
    loaded: int = 0
    refuse: Callable[[dict[str, Any]], bool] = lambda document: False

    def apply(self, document: dict[str, Any]) -> None:
        if self.refuse(document):
            raise ValueError(f"refusing {document['metadata']['name']}")
        metadata = document["metadata"]
        key = (document["kind"], metadata.get("namespace"), metadata["name"])
        self.objects[key] = document
        self.calls.append(("apply", key[0], key[1], key[2], metadata["resourceVersion"]))

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.objects.pop((kind, namespace, name), None)
        self.calls.append(("delete", kind, namespace, name, ""))

    def mark_loaded(self) -> None:
        self.loaded += 1

    def names(self, kind: str) -> set[str]:
        return {name for (k, _, name) in self.objects if k == kind}


@contextlib.asynccontextmanager
async def kube(fake_api: FakeApi) -> AsyncIterator[KubeClient]:
    api_client = await fake_api.api_client()
    try:
        yield KubeClient(api_client)
    finally:
        await api_client.close()


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    task = asyncio.create_task(informer.run())
    try:
        yield informer
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def flavor(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "labels": labels},
    }


def local_queue(name: str, namespace: str = "default", cluster_queue: str = "team-a") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }
