"""The controller manager: informers into one cache, controllers gated by leader election.

Informers run on every replica, leader or not, so a standby keeps a warm cache and can take over
without listing the cluster again. Controllers run only while this replica leads: when the lease
is won they start (after the cache has synced, with every cached object enqueued once, so
nothing that changed while standing by is missed); when it is lost they are cancelled at once,
before any further write. Without an elector the controllers run as soon as the cache syncs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.runtime import Controller, KnowsSettledKeys
from scheduler.kube import Informer, InformerSettings, KubeClient, LeaderElector

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

# (old, new) of a watched object → the keys (or typed requests) its change queues
KeyMapper = Callable[[dict[str, Any] | None, dict[str, Any] | None], Iterable[K]]


@dataclass(frozen=True)
class WatchSpec:
    kind: str
    label_selector: str | None = None


def merge_watches(*groups: Iterable[WatchSpec]) -> list[WatchSpec]:
    """One watch per kind; two different selectors for one kind is a wiring mistake."""
    merged: dict[str, WatchSpec] = {}
    for group in groups:
        for spec in group:
            seen = merged.get(spec.kind)
            if seen is not None and seen != spec:
                raise ValueError(
                    f"{spec.kind} is watched with two selectors ({seen.label_selector!r} and "
                    f"{spec.label_selector!r}); the controllers must agree on one"
                )
            merged[spec.kind] = spec
    return list(merged.values())


class _SyncCountingSink:
    """Forwards one informer's objects to the cache; the cache is marked loaded after the last first list."""

    def __init__(self, manager: ControllerManager) -> None:
        self.manager = manager

    def apply(self, document: dict[str, Any]) -> None:
        self.manager.cache.apply(document)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.manager.cache.delete(kind, name, namespace)

    def mark_loaded(self) -> None:
        self.manager._informer_synced()


@dataclass
class _Registration:
    controller: Controller[Any]
    enqueue: dict[str, KeyMapper[Any]]


def object_key(document: dict[str, Any]) -> str:
    """The reconcile key of an object: "namespace/name", or "name" when cluster-scoped."""
    metadata = document.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = str(metadata.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


def _settled_check(controller: Controller[K]) -> Callable[[K], bool] | None:
    """The reconciler's ``settled`` when it has one (``KnowsSettledKeys``)."""
    reconciler = controller.reconciler
    return reconciler.settled if isinstance(reconciler, KnowsSettledKeys) else None


def own_key(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """The mapper for a controller that reconciles the changed object itself."""
    document = new if new is not None else old
    return [object_key(document)] if document is not None else []


class ControllerManager:
    def __init__(
        self,
        client: KubeClient,
        watches: list[WatchSpec],
        *,
        leader: LeaderElector | None,
        informer_settings: InformerSettings | None = None,
    ) -> None:
        if not watches:
            raise ValueError("a controller manager needs at least one watched kind")
        self.client = client
        self.cache = ClusterCache()
        self.leader = leader
        self.watches = list(watches)
        sink = _SyncCountingSink(self)
        self.informers = [
            Informer(client, w.kind, sink, label_selector=w.label_selector, settings=informer_settings)
            for w in self.watches
        ]
        self._unsynced = len(self.informers)
        self._registrations: list[_Registration] = []
        self.leading = asyncio.Event()  # set while this replica's controllers run
        self.terms = 0  # how many times the controllers were started (leadership terms)

    @property
    def controllers(self) -> list[Controller[Any]]:
        return [r.controller for r in self._registrations]

    def add(self, controller: Controller[K], *, enqueue: Mapping[str, KeyMapper[K]]) -> None:
        """Run ``controller`` while leading; each change of a watched kind in ``enqueue`` queues the mapper's keys."""
        watched = {w.kind for w in self.watches}
        unwatched = sorted(set(enqueue) - watched)
        if unwatched:
            raise ValueError(
                f"controller {controller.name!r} enqueues on {', '.join(unwatched)}, which the manager does not "
                f"watch (watched: {', '.join(sorted(watched))})"
            )
        registration = _Registration(controller, dict(enqueue))
        self._registrations.append(registration)
        for kind, mapper in registration.enqueue.items():
            self.cache.on_change(kind, self._enqueuer(controller, mapper))

    def _enqueuer(
        self, controller: Controller[K], mapper: KeyMapper[K]
    ) -> Callable[[dict[str, Any] | None, dict[str, Any] | None], None]:
        settled = _settled_check(controller)

        def enqueue(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            for key in mapper(old, new):
                # Before a term starts (the first list, a standby's watch) a settled key waits
                # for nothing: the term's own pass skips it too. While leading every change counts.
                if settled is not None and not self.leading.is_set() and settled(key):
                    continue
                controller.queue.add(key)

        return enqueue

    def _informer_synced(self) -> None:
        self._unsynced -= 1
        if self._unsynced == 0:
            self.cache.mark_loaded()

    def unsynced(self) -> list[str]:
        return [i.kind.kind for i in self.informers if not i.synced.is_set()]

    async def run(self) -> None:
        """Informers always, controllers while leading; until cancelled."""
        try:
            async with asyncio.TaskGroup() as tasks:
                for informer in self.informers:
                    tasks.create_task(informer.run(), name=f"informer-{informer.kind.kind}")
                tasks.create_task(self._campaign(), name="controllers")
        finally:
            for registration in self._registrations:
                registration.controller.queue.shutdown()

    async def _campaign(self) -> None:
        if self.leader is None:
            await self._lead()
            return
        elector = self.leader
        earlier = elector.on_started_leading

        async def lead() -> None:
            if earlier is None:
                await self._lead()
                return
            async with asyncio.TaskGroup() as both:
                both.create_task(earlier())
                both.create_task(self._lead())

        elector.on_started_leading = lead
        try:
            while True:
                await elector.run()  # returns once the lease is lost; the controllers were cancelled with it
                log.warning("%s lost leadership; controllers stopped, campaigning again", elector.identity)
        finally:
            elector.on_started_leading = earlier

    async def _lead(self) -> None:
        await self.cache.synced.wait()
        self.terms += 1
        self._resync()
        self.leading.set()
        try:
            async with asyncio.TaskGroup() as controllers:
                for registration in self._registrations:
                    controllers.create_task(
                        registration.controller.run(), name=f"controller-{registration.controller.name}"
                    )
        finally:
            self.leading.clear()

    def _resync(self) -> None:
        """Enqueue every cached object once: what changed while standing by is reconciled now.

        Keys a reconciler calls settled (a finished job whose end is recorded) are left out.
        """
        for registration in self._registrations:
            keys: dict[Hashable, None] = {}  # insertion-ordered: the cache's order, each key once
            for kind, mapper in registration.enqueue.items():
                for document in self.cache.list(kind):
                    try:
                        keys.update(dict.fromkeys(mapper(None, document)))
                    except Exception:  # as in the cache's handlers: one bad mapper must not stop the others
                        log.exception("%s: mapping a cached %s to keys failed", registration.controller.name, kind)
            settled = _settled_check(registration.controller)
            for key in keys:
                if settled is None or not settled(key):
                    registration.controller.queue.add(key)
