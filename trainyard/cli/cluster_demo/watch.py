"""What `trainyard cluster-demo` sees of the cluster: Workloads, TrainJobs and Pods as the API server serves them.

``ClusterWatch`` runs one informer (list, then watch) per kind over the tour's own client, as
``kubectl get -w`` would, keeps the latest copy of each object, and records every change of a
Workload's phase, so the tour can wait for a state and print the path each job took. Nothing
here decides anything: every phase is read from the conditions the controllers wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scheduler.kube import InformerGroup, InformerSettings, KubeClient
from trainyard.cli.progress import trainjob_phase, workload_phase

T = TypeVar("T")
Key = tuple[str, str, str]  # kind, namespace, name


class TourTimeout(Exception):
    """An expected state was not reached in time; the message says which and what was seen."""


def owner_name(document: Mapping[str, Any]) -> str | None:
    for reference in (document.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return str(reference.get("name"))
    return None


@dataclass
class PhaseChange:
    """One observed change: which object, the phase it reached, the seconds since the watch began."""

    kind: str
    key: str  # namespace/name
    phase: str
    at: float


@dataclass
class ClusterWatch:
    client: KubeClient
    settings: InformerSettings
    kinds: tuple[str, ...] = ("Workload", "TrainJob", "Pod")
    objects: dict[Key, dict[str, Any]] = field(default_factory=dict)
    changes: list[PhaseChange] = field(default_factory=list)
    _phases: dict[Key, str] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    _group: InformerGroup | None = None
    _started: float = 0.0

    # ------------------------------------------------------------------ the informers' sink

    def apply(self, document: dict[str, Any]) -> None:
        metadata = document.get("metadata") or {}
        kind = str(document.get("kind", ""))
        key = (kind, str(metadata.get("namespace") or ""), str(metadata.get("name", "")))
        self.objects[key] = document
        phase = {"Workload": workload_phase, "TrainJob": trainjob_phase}.get(kind)
        if phase is not None:
            now = phase(document)
            if self._phases.get(key) != now:
                self._phases[key] = now
                loop_time = asyncio.get_running_loop().time()
                self.changes.append(PhaseChange(kind, f"{key[1]}/{key[2]}", now, loop_time - self._started))
        self._changed.set()

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.objects.pop((kind, namespace or "", name), None)
        self._changed.set()

    def mark_loaded(self) -> None:
        self._changed.set()

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> ClusterWatch:
        self._started = asyncio.get_running_loop().time()
        self._group = InformerGroup(self.client, self.kinds, self, settings=self.settings)
        self._task = asyncio.create_task(self._group.run(), name="cluster-demo-watch")
        async with asyncio.timeout(10.0):
            await self._group.synced.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # ------------------------------------------------------------------ reading

    def of_kind(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [
            document
            for (k, ns, _), document in sorted(self.objects.items())
            if k == kind and (namespace is None or ns == namespace)
        ]

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def workload_of(self, namespace: str, trainjob: str) -> dict[str, Any] | None:
        """The Workload the queue controller created for a TrainJob (its controller owner)."""
        for workload in self.of_kind("Workload", namespace):
            if owner_name(workload) == trainjob:
                return workload
        return None

    def path_of(self, namespace: str, trainjob: str) -> list[str]:
        """Every phase the TrainJob's Workload went through, then the TrainJob's own end state."""
        workload = self.workload_of(namespace, trainjob)
        path: list[str] = []
        if workload is not None:
            key = f"{namespace}/{workload['metadata']['name']}"
            path = [change.phase for change in self.changes if change.kind == "Workload" and change.key == key]
        job = self.get("TrainJob", namespace, trainjob)
        if job is not None and trainjob_phase(job) in ("Complete", "Failed"):
            path.append(f"TrainJob {trainjob_phase(job)}")
        return path

    async def wait_for(self, check: Callable[[], T | None], *, timeout: float, what: str) -> T:
        """The first truthy answer of ``check`` (re-asked on every change), or TourTimeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self._changed.clear()
            answer = check()
            if answer:
                return answer
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TourTimeout(f"timed out after {timeout:g}s waiting for {what}")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, 0.5)):
                    await self._changed.wait()
