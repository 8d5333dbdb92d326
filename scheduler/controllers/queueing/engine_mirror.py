"""The engine as a cache of the API server: queue objects, Nodes, Namespaces and Workloads in.

``EngineMirror`` owns the controller's ``AdmissionEngine``. ``rebuild`` makes a fresh engine
from everything cached (Workloads with ``status.admission`` are restored as admitted), which is
what a new leader does first. After that the cache's change handlers keep it current: queue
objects and Nodes are applied, deleted objects removed, new Workloads submitted, deleted ones
forgotten; a Workload whose cached status disagrees with the engine (an admission the engine
does not know of, or one it holds that the server no longer shows) is submitted again as the
server has it — the server is the truth. Our own writes echo back through the informer; while a
write is in flight or its revision not yet seen, those echoes are not taken as disagreement, and
``freshest`` answers with what the write returned rather than the older cached copy (the cache
may lag by seconds when a watch is cut: a decision taken on it would undo our own admission).
A write that got no answer and whose Workload could not be read back either may have landed:
until the cache shows a revision newer than the one it was made at, the key is ``unsure`` and an
admission keeps its quota in the engine.

A finished Workload is forgotten by the engine (its quota released, its record dropped), as a
long simulation forgets each job as it completes: the engine holds only live workloads, and a
new leader's rebuild does not parse every Workload the cluster ever finished.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import KUEUE_KINDS, Workload
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.conditions import condition_true
from scheduler.controllers.views import WorkloadView
from scheduler.engine import AdmissionEngine, EngineConfig, WorkloadState

log = logging.getLogger(__name__)

QUEUE_KINDS = ("ResourceFlavor", "Topology", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass")
ENGINE_KINDS = (*QUEUE_KINDS, "Node", "Namespace", "Workload")
EXPECTATION_TTL = 30.0  # seconds an unseen revision of our own write is waited for


def workload_key(document: dict[str, Any]) -> str:
    """The engine's key of a Workload document (``WorkloadView.key``)."""
    return WorkloadView(document).key


_BOOKKEEPING = frozenset({"resourceVersion", "managedFields", "generation"})


def only_status_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two revisions of a queue object, Node or Namespace differ only in status and
    bookkeeping: a ClusterQueue's status write is no input of admission (a Node's status is)."""
    if new.get("kind") == "Node":
        return False

    def essence(document: dict[str, Any]) -> dict[str, Any]:
        metadata = {k: v for k, v in (document.get("metadata") or {}).items() if k not in _BOOKKEEPING}
        return {**{k: v for k, v in document.items() if k != "status"}, "metadata": metadata}

    return essence(old) == essence(new)


def _revision(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class _OwnWrite:
    revision: int | None
    when: float
    document: dict[str, Any] | None  # the server's answer to the write; None: it never came


def _ahead_of(cached: dict[str, Any], write: _OwnWrite, now: float) -> bool:
    """Whether our ``write`` is newer than the ``cached`` copy (and still awaited: an echo not seen
    within ``EXPECTATION_TTL`` is given up on, and the cache taken as the truth again)."""
    seen = _revision((cached.get("metadata") or {}).get("resourceVersion"))
    caught_up = seen is not None and write.revision is not None and seen >= write.revision
    return not caught_up and now - write.when <= EXPECTATION_TTL


class EngineMirror:
    def __init__(
        self,
        cache: ClusterCache,
        config: EngineConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.cache = cache
        self.config = config or EngineConfig()
        self.clock = clock
        self.on_change = on_change  # an input changed: an admission cycle is due
        self.engine = AdmissionEngine(self.config)
        self.live = False  # handlers feed the engine only after the first rebuild
        self.writing: set[str] = set()  # workload keys with a status write in flight
        # admissions a cycle decided whose writes are not handed off yet (the cycle awaits its
        # evictions first): the server still shows them pending, and that is no news
        self.deciding: set[str] = set()
        # keys with a write handed off to land later (set by the queue controller): as good as in flight
        self.handed_off: Callable[[str], bool] = lambda key: False
        self._expected: dict[str, _OwnWrite] = {}  # our writes whose revision the cache has not shown yet
        self.taken_back: Counter[str] = Counter()  # admissions the engine gave up for the server's view, by cause
        for kind in ENGINE_KINDS:
            cache.on_change(kind, self._handler(kind))

    # ------------------------------------------------------------------ rebuild

    def rebuild(self) -> None:
        """A fresh engine from the cache: the state the API server holds now."""
        self.engine = AdmissionEngine(self.config)
        self._expected.clear()
        for kind in QUEUE_KINDS:
            for document in self.cache.list(kind):
                self._apply(kind, document)
        for document in self.cache.list("Node"):
            self._apply("Node", document)
        for document in self.cache.list("Namespace"):
            self._apply("Namespace", document)
        now = self.clock()
        for document in self.cache.list("Workload"):
            self._submit(document, now)
        self.live = True

    # ------------------------------------------------------------------ handlers

    def _handler(self, kind: str) -> Callable[[dict[str, Any] | None, dict[str, Any] | None], None]:
        def handle(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            if not self.live:
                return
            if kind == "Workload":
                if not self._workload_changed(old, new):
                    return  # e.g. the echo of our own write: the engine knew it already
            elif old is not None and new is not None and only_status_changed(old, new):
                return  # e.g. the queue-status controller's own write: nothing admission reads
            elif new is None:
                self._delete(kind, old)
            else:
                self._apply(kind, new)
            self.on_change()

        return handle

    def _apply(self, kind: str, document: dict[str, Any]) -> None:
        try:
            if kind == "Namespace":
                labels = (document.get("metadata") or {}).get("labels") or {}
                self.engine.set_namespace(str(document["metadata"]["name"]), dict(labels))
                return
            model: Resource = (
                Node.model_validate(document) if kind == "Node" else KUEUE_KINDS[kind].model_validate(document)
            )
        except ValidationError as error:
            name = (document.get("metadata") or {}).get("name")
            log.warning("%s %s is not readable and is left out of admission: %s", kind, name, error)
            return
        self.engine.apply(model)

    def _delete(self, kind: str, document: dict[str, Any] | None) -> None:
        if document is None:
            return
        metadata = document.get("metadata") or {}
        if kind == "Namespace":
            self.engine.remove_namespace(str(metadata.get("name")))
            return
        self.engine.delete(kind, str(metadata.get("name")), metadata.get("namespace"))

    def _workload_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
        """Take a Workload's change into the engine; whether the engine changed (a cycle is due)."""
        now = self.clock()
        if new is None:
            if old is not None:
                self.engine.forget(workload_key(old), now)
                self._expected.pop(workload_key(old), None)  # no echo will come for a deleted Workload
            return True
        key = workload_key(new)
        info = self.engine.workload(key)
        if info is None:
            self._submit(new, now)
            return True
        if not self._settled(key, new, now):
            return False
        if condition_true(new, "Finished"):
            self.engine.forget(key, now)
            return True
        admitted_on_server = bool((new.get("status") or {}).get("admission"))
        spec_changed = old is not None and (old.get("metadata") or {}).get("generation") != (
            new.get("metadata") or {}
        ).get("generation")
        engine_admitted = info.state is WorkloadState.ADMITTED
        if admitted_on_server != engine_admitted or (spec_changed and not engine_admitted):
            self.resubmit(key, "its change on the server" if spec_changed else "another writer's status")
            return True
        return False

    def _settled(self, key: str, document: dict[str, Any], now: float) -> bool:
        """False while our own write to ``key`` is in flight or its revision not yet seen."""
        if self.busy(key):
            return False
        expected = self._expected.get(key)
        if expected is None:
            return True
        if _ahead_of(document, expected, now):
            return False
        del self._expected[key]
        return True

    def busy(self, key: str) -> bool:
        """Whether a status write of ours to ``key`` is decided, in flight, or handed off and not landed."""
        return key in self.writing or key in self.deciding or self.handed_off(key)

    def freshest(self, key: str) -> dict[str, Any] | None:
        """The newest Workload ``key`` we know: the cached copy, or our own write's answer while
        the cache has not caught up with it (None when the cache has no such Workload)."""
        document, awaited = self._cached_and_awaited(key)
        if awaited is not None and awaited.document is not None:
            return awaited.document
        return document

    def unsure(self, key: str) -> bool:
        """Whether a write of ours to ``key`` may have landed unseen (``lost_answer``) and the
        cache has not shown a newer revision yet."""
        _, awaited = self._cached_and_awaited(key)
        return awaited is not None and awaited.document is None

    def holds_quota_on_server(self, key: str) -> bool:
        """Whether the server, as last read, may still count ``key``'s admission (True when unsure):
        a Workload it shows finished, without an admission, or deleted holds nothing."""
        if self.unsure(key):
            return True
        document = self.freshest(key)
        if document is None:
            return False  # its deletion event came
        return bool((document.get("status") or {}).get("admission")) and not condition_true(document, "Finished")

    def _cached_and_awaited(self, key: str) -> tuple[dict[str, Any] | None, _OwnWrite | None]:
        """The cached Workload ``key``, and our write to it that the cache has not shown yet, if any."""
        namespace, _, name = key.partition("/")
        document = self.cache.get("Workload", name, namespace)
        expected = self._expected.get(key)
        if document is None or expected is None or not _ahead_of(document, expected, self.clock()):
            return document, None
        return document, expected

    # ------------------------------------------------------------------ resync

    def resync(self) -> list[str]:
        """Heal what a missed change left between the cache and the engine; the keys healed.

        The handlers above skip a change that arrives while our own write to that Workload is in
        flight or its revision unseen; if that change was someone else's (a Finished written by
        the TrainJob reconciler, a deletion) and nothing changes the Workload again, the engine
        would keep its old view (quota held for a finished job, a job it never saw). This pass,
        run periodically, compares every settled Workload with the engine, as a level-triggered
        controller must, and takes the server's view wherever they differ.
        """
        now = self.clock()
        healed: list[str] = []
        cached: set[str] = set()
        for document in self.cache.list("Workload"):
            key = workload_key(document)
            cached.add(key)
            if not self._settled(key, document, now):
                continue
            info = self.engine.workload(key)
            if condition_true(document, "Finished"):
                if info is not None:  # finished on the server, still held by the engine
                    self.engine.forget(key, now)
                    healed.append(key)
                continue
            admitted_on_server = bool((document.get("status") or {}).get("admission"))
            missing = info is None or info.state is WorkloadState.FINISHED
            if missing or admitted_on_server != (info is not None and info.state is WorkloadState.ADMITTED):
                self.resubmit(key, "resync")
                healed.append(key)
        for key in [w.key for w in self.engine.all_workloads() if w.key not in cached and not self.busy(w.key)]:
            self.engine.forget(key, now)
            healed.append(key)
        if healed:
            log.warning("resync: the engine differed from the API server for %s; took the server's view", healed)
        return healed

    # ------------------------------------------------------------------ writes' bookkeeping

    def learned(self, key: str, document: dict[str, Any]) -> None:
        """The server showed us this revision of ``key`` itself (our write's answer, or a read after
        a failed write): until the informer shows it too, it is the freshest we know."""
        version = (document.get("metadata") or {}).get("resourceVersion")
        if version is not None:
            self._expected[key] = _OwnWrite(_revision(version), self.clock(), document)

    def lost_answer(self, key: str, base_version: Any) -> None:
        """A write of ours made at ``base_version`` got no answer, and reading the Workload back
        failed too: it may have landed. No cached revision at or below ``base_version`` is the
        server's word on ``key`` any more; until a newer one shows (or ``EXPECTATION_TTL``
        passes), the engine keeps what it decided, the conservative side for an admission."""
        base = _revision(base_version)
        self._expected[key] = _OwnWrite(None if base is None else base + 1, self.clock(), None)

    def resubmit(self, key: str, cause: str) -> None:
        """Forget what the engine decided for ``key`` and take the Workload as the cache has it.

        The way back from a failed write: quota the engine reserved for a decision that did not
        land is released; an admission that did land is restored. "As the cache has it" means
        ``freshest``: an admission we wrote a moment ago counts even before its echo arrives.
        An admission taken back this way is logged and counted by ``cause`` (``taken_back``).
        """
        now = self.clock()
        before = self.engine.workload(key)
        was_admitted = before is not None and before.state is WorkloadState.ADMITTED
        self.engine.forget(key, now)
        document = self.freshest(key)
        if document is not None:
            self._submit(document, now)
        after = self.engine.workload(key)
        if was_admitted and (after is None or after.state is not WorkloadState.ADMITTED):
            self.taken_back[cause] += 1
            log.info("Workload %s: admission taken back in the engine (%s)", key, cause)

    def _submit(self, document: dict[str, Any], now: float) -> None:
        if condition_true(document, "Finished"):
            self.engine.forget(workload_key(document), now)  # nothing to admit, no quota to hold
            return
        try:
            workload = Workload.model_validate(document)
        except ValidationError as error:
            log.warning("Workload %s is not readable and is left out of admission: %s", workload_key(document), error)
            return
        self.engine.submit(workload, now)
