"""Several informers feeding one sink, which is marked loaded only once every kind has synced.

A webhook must not answer from a half-filled cache: ``mark_loaded()`` reaches the shared sink
after the first list of the last kind, so readiness means every kind is there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from scheduler.kube.client import KubeClient
from scheduler.kube.informer import Informer, InformerSettings, ObjectSink
from scheduler.kube.kinds import KubeKind, kind_named


class _KindSink:
    """Forwards one kind's objects to the shared sink and reports its first sync to the group."""

    def __init__(self, group: InformerGroup, sink: ObjectSink) -> None:
        self.group = group
        self.sink = sink

    def apply(self, document: dict[str, Any]) -> None:
        self.sink.apply(document)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.sink.delete(kind, name, namespace)

    def mark_loaded(self) -> None:
        self.group._kind_synced()


class InformerGroup:
    """One informer per kind into ``sink`` (in ``namespace``, or cluster-wide); ``run()`` until
    cancelled, ``synced`` once all listed."""

    def __init__(
        self,
        client: KubeClient,
        kinds: Iterable[str | KubeKind],
        sink: ObjectSink,
        *,
        namespace: str | None = None,
        settings: InformerSettings | None = None,
    ) -> None:
        self.sink = sink
        self.synced = asyncio.Event()
        forward = _KindSink(self, sink)
        self.informers = [
            Informer(client, kind_named(kind), forward, namespace=namespace, settings=settings) for kind in kinds
        ]
        self._waiting = len(self.informers)
        if not self.informers:
            raise ValueError("an informer group needs at least one kind")

    def _kind_synced(self) -> None:
        self._waiting -= 1
        if self._waiting == 0:
            self.synced.set()
            self.sink.mark_loaded()

    def unsynced(self) -> list[str]:
        """The kinds not listed yet (for a readiness message)."""
        return [i.kind.kind for i in self.informers if not i.synced.is_set()]

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tasks:
            for informer in self.informers:
                tasks.create_task(informer.run(), name=f"informer-{informer.kind.kind}")
