"""Where the dashboard's data comes from, behind three small interfaces.

``QueueSource`` hands out a ``scheduler.queues.QueueState``: the one the CLI's queue commands
and the visibility API query. ``StaticQueues`` loads objects once (``--objects DIR``, the
benchmark); ``CachedQueues`` reads a cache of the cluster's objects (the dashboard's own
informers, or the controllers' cache inside ``trainyard serve``) and, where the controllers
run in the same process and lead, their engine itself: the numbers are then the very ones the
next admission cycle decides with. ``ObjectReader`` is that cache (TrainJobs, Workloads, Pods),
and ``ChangeCounter`` counts its changes, which is what live pages watch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import KUEUE_KINDS, Workload
from scheduler.engine import AdmissionEngine, EngineConfig
from scheduler.queues import QueueState, load_state

QUEUE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Topology")
# what the pages read from a cluster cache; a change to any of them is a change a page may show
WATCHED_KINDS = (*QUEUE_KINDS, "Workload", "Node", "Namespace", "TrainJob", "Pod")


class ObjectReader(Protocol):
    """A cache of the cluster's objects as plain documents (``ClusterCache`` is one)."""

    def list(
        self, kind: str, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]: ...

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...

    def on_change(self, kind: str, handler: Callable[[dict[str, Any] | None, dict[str, Any] | None], None]) -> None: ...


class ChangeCounter:
    """A number that grows with every change the pages could show; live pages poll it."""

    def __init__(self) -> None:
        self.version = 0

    def bump(self, *_: object) -> None:
        self.version += 1

    def follow(self, reader: ObjectReader, kinds: Iterable[str] = WATCHED_KINDS) -> None:
        for kind in kinds:
            reader.on_change(kind, self.bump)


class QueueSource(Protocol):
    async def state(self) -> QueueState | None: ...


@dataclass
class StaticQueues:
    """Queue objects and Workloads loaded once, settled by the engine as `trainyard queues` settles them."""

    objects: list[Resource]
    workloads: list[Workload]
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    config: EngineConfig = field(default_factory=EngineConfig)
    _state: QueueState | None = None

    def load(self, now: float | None = None) -> QueueState:
        if self._state is None:
            self._state = load_state(
                self.objects,
                self.workloads,
                now=time.time() if now is None else now,
                namespaces=self.namespaces,
                config=self.config,
            )
        return self._state

    async def state(self) -> QueueState | None:
        return self.load()


@dataclass
class ParsedObjects:
    objects: list[Resource]
    workloads: list[Workload]
    namespaces: dict[str, dict[str, str]]
    notes: list[str]


def parse_documents(documents: Mapping[str, list[dict[str, Any]]]) -> ParsedObjects:
    """Cached documents as the engine's models; one that does not parse is left out, with a note."""
    parsed = ParsedObjects([], [], {}, [])
    for kind, items in documents.items():
        for item in items:
            metadata = item.get("metadata") or {}
            if kind == "Namespace":
                parsed.namespaces[str(metadata.get("name"))] = dict(metadata.get("labels") or {})
                continue
            model: type[Resource] = Node if kind == "Node" else KUEUE_KINDS[kind]
            try:
                obj = model.model_validate(item)
            except ValidationError as error:
                where = f"{metadata.get('namespace')}/" if metadata.get("namespace") else ""
                parsed.notes.append(f"{kind} {where}{metadata.get('name', '?')} left out: {error.errors()[0]['msg']}")
                continue
            if isinstance(obj, Workload):
                parsed.workloads.append(obj)
            else:
                parsed.objects.append(obj)
    return parsed


LiveEngine = Callable[[], AdmissionEngine | None]


@dataclass
class CachedQueues:
    """The queues of a cluster cache: the controllers' live engine where one is given and
    leading, else an engine loaded from the cache (rebuilt after changes, at most every
    ``rebuild_seconds``, in a thread so the event loop keeps serving)."""

    reader: ObjectReader
    changes: ChangeCounter
    live_engine: LiveEngine | None = None
    config: EngineConfig = field(default_factory=EngineConfig)
    rebuild_seconds: float = 1.0
    notes: list[str] = field(default_factory=list)
    stale: bool = False  # the last state handed out predates changes (rebuilt again soon)
    _built: tuple[int, float, QueueState] | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def state(self) -> QueueState | None:
        engine = self.live_engine() if self.live_engine is not None else None
        if engine is not None:
            self.stale = False
            return QueueState(engine, time.time())
        async with self._lock:
            built = self._built
            if built is not None and (
                built[0] == self.changes.version or time.monotonic() - built[1] < self.rebuild_seconds
            ):
                self.stale = built[0] != self.changes.version
                return built[2]
            version = self.changes.version
            documents = {kind: list(self.reader.list(kind)) for kind in (*QUEUE_KINDS, "Node", "Namespace", "Workload")}
            state = await asyncio.to_thread(self._load, documents)
            self._built = (version, time.monotonic(), state)
            self.stale = version != self.changes.version
            return state

    def _load(self, documents: dict[str, list[dict[str, Any]]]) -> QueueState:
        parsed = parse_documents(documents)
        self.notes = parsed.notes
        return load_state(
            parsed.objects, parsed.workloads, now=time.time(), namespaces=parsed.namespaces, config=self.config
        )
