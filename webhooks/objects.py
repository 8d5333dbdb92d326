"""The object cache the admission handlers read, and the feeds that fill it.

Handlers never fetch anything: they read runtimes, queues, flavors, topologies, priority
classes, namespaces and nodes from this cache. Whoever runs the server feeds it through the
small ``ObjectSink`` protocol (``runtimes.k8s.sink``, alias ``ObjectFeed``) — a directory of YAML (``--objects DIR``) today, the Kubernetes
adapter's watches in the service. Every change bumps ``version`` so derived data (validated
runtimes, the admission engine used for the "can ever fit" rule, remembered verdicts) is rebuilt
only when needed.

Only a change of what a handler reads counts. On a live cluster most updates are not: Kueue
rewrites a ClusterQueue's and a LocalQueue's status at every admission, and kubelets refresh
their Nodes' conditions. Such an update (status of a queue object or runtime; of a Node, anything
but its allocatable, capacity and conditions' status; resourceVersion, managedFields, timestamps)
leaves the version alone, or the engine would be rebuilt and every verdict forgotten several times
a second on a busy cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from runtimes.api.trainer import ClusterTrainingRuntime, TrainingRuntime
from runtimes.k8s import wire
from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from runtimes.k8s.sink import ObjectSink
from scheduler.api.kueue import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Topology,
    WorkloadPriorityClass,
)

# kind -> model, for every kind the cache keeps (Namespace is kept as its labels only).
CACHED_KINDS: dict[str, type[Resource]] = {
    "TrainingRuntime": TrainingRuntime,
    "ClusterTrainingRuntime": ClusterTrainingRuntime,
    "LocalQueue": LocalQueue,
    "ClusterQueue": ClusterQueue,
    "Cohort": Cohort,
    "ResourceFlavor": ResourceFlavor,
    "Topology": Topology,
    "WorkloadPriorityClass": WorkloadPriorityClass,
    "Node": Node,
}
NAMESPACED_KINDS = frozenset({"TrainingRuntime", "LocalQueue"})
# The kinds the admission engine takes (everything cached but the runtimes).
ENGINE_KINDS = ("ResourceFlavor", "Topology", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Node")


T = TypeVar("T")


class ObjectFeedError(ValueError):
    """An object a feed could not cache; the message names the object and the field."""


# Sources feed the cache through the one sink protocol, shared with scheduler.kube's informers.
ObjectFeed = ObjectSink


@dataclass
class ObjectCache:
    """Objects by kind, keyed ``name`` (cluster-scoped) or ``namespace/name`` (namespaced)."""

    objects: dict[str, dict[str, Resource]] = field(default_factory=lambda: {kind: {} for kind in CACHED_KINDS})
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    version: int = 0
    loaded: bool = False
    _derived: dict[str, tuple[int, Any]] = field(default_factory=dict, repr=False)
    # (kind, namespace, name) -> what handlers read of the object as last applied
    _read_views: dict[tuple[str, str | None, str], bytes] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------------------ the feed

    def apply(self, document: dict[str, Any]) -> None:
        kind = document.get("kind")
        metadata = document.get("metadata") or {}
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not name:
            raise ObjectFeedError(f"{kind} without metadata.name; every cached object needs a name")
        if kind == "Namespace":
            labels = metadata.get("labels") or {}
            namespace_labels = {str(k): str(v) for k, v in labels.items()}
            if self.namespaces.get(name) != namespace_labels:
                self.namespaces[name] = namespace_labels
                self.version += 1
            return
        model_kind = kind if isinstance(kind, str) else ""
        model = CACHED_KINDS.get(model_kind)
        if model is None:
            raise ObjectFeedError(
                f"{kind!r} {name!r} is not a kind the webhook caches; expected one of "
                f"{', '.join([*CACHED_KINDS, 'Namespace'])}"
            )
        view_key = _view_key(model_kind, metadata.get("namespace"), name)
        view = read_view(model_kind, document)
        if view is not None and self._read_views.get(view_key) == view:
            return  # nothing a handler reads changed (a status update, a heartbeat)
        try:
            obj = model.model_validate(document)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in item['loc'])}: {item['msg']}" for item in error.errors(include_url=False)
            )
            raise ObjectFeedError(f"{kind} {name!r}: {problems}") from None
        if kind in NAMESPACED_KINDS and not obj.namespace:
            raise ObjectFeedError(f"{kind} {name!r} needs metadata.namespace")
        self.objects[model_kind][obj.key] = obj
        if view is None:
            self._read_views.pop(view_key, None)
        else:
            self._read_views[view_key] = view
        self.version += 1

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        if kind == "Namespace":
            self.namespaces.pop(name, None)
        else:
            key = f"{namespace}/{name}" if kind in NAMESPACED_KINDS else name
            self.objects.get(kind, {}).pop(key, None)
            self._read_views.pop(_view_key(kind, namespace, name), None)
        self.version += 1

    def mark_loaded(self) -> None:
        self.loaded = True

    # ----------------------------------------------------------------------------- readers

    def derived(self, key: str, build: Callable[[ObjectCache], T]) -> T:
        """``build(self)``, computed once per cache version (an engine, validated runtimes...)."""
        version = self.version  # read first: a change made while building makes the next call rebuild
        cached = self._derived.get(key)
        if cached is not None and cached[0] == version:
            value: T = cached[1]
            return value
        value = build(self)
        self._derived[key] = (version, value)
        return value

    def get(self, kind: str, name: str, namespace: str | None = None) -> Resource | None:
        key = f"{namespace}/{name}" if kind in NAMESPACED_KINDS else name
        return self.objects.get(kind, {}).get(key)

    # A large review reads the cache on the review worker while the feed writes it on the event
    # loop (webhooks.review_runner): readers iterate over a copy, taken in one step.

    def all(self, kind: str) -> Iterator[Resource]:
        return iter(list(self.objects.get(kind, {}).values()))

    def names(self, kind: str) -> set[str]:
        return {obj.name for obj in list(self.objects.get(kind, {}).values())}

    def namespace_items(self) -> list[tuple[str, dict[str, str]]]:
        """Every Namespace's name and labels."""
        return list(self.namespaces.items())

    def local_queue(self, namespace: str, name: str) -> LocalQueue | None:
        queue = self.get("LocalQueue", name, namespace)
        return queue if isinstance(queue, LocalQueue) else None

    def runtime(self, kind: str, name: str, namespace: str | None) -> TrainingRuntime | ClusterTrainingRuntime | None:
        found = self.get(kind, name, namespace)
        return found if isinstance(found, TrainingRuntime | ClusterTrainingRuntime) else None

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        # An unknown namespace carries only the label Kubernetes always sets.
        return self.namespaces.get(namespace, {"kubernetes.io/metadata.name": namespace})


# metadata a handler may read; the rest (resourceVersion, managedFields, timestamps) changes on every write
_READ_METADATA = ("name", "namespace", "labels", "annotations", "uid", "generateName")


def _view_key(kind: str, namespace: str | None, name: str) -> tuple[str, str | None, str]:
    return kind, namespace if kind in NAMESPACED_KINDS else None, name


def read_view(kind: str, document: dict[str, Any]) -> bytes | None:
    """What the handlers and the engine read of a cached object, canonically encoded (None when it
    cannot be encoded, as a YAML date in a spec: then every apply counts as a change)."""
    metadata = document.get("metadata") or {}
    read_metadata = {key: metadata.get(key) for key in _READ_METADATA if key in metadata}
    if kind == "Node":
        status = document.get("status") or {}
        conditions = status.get("conditions") or []
        view: Any = [
            read_metadata,
            document.get("spec"),
            status.get("allocatable"),
            status.get("capacity"),
            sorted((str(c.get("type")), str(c.get("status"))) for c in conditions if isinstance(c, dict)),
        ]
    else:  # queue objects and runtimes: their spec (and a priority class's top-level value), never status
        view = [read_metadata, {key: value for key, value in document.items() if key not in ("metadata", "status")}]
    try:
        return wire.dumps(view, sort_keys=True)
    except (TypeError, ValueError):
        return None


def iter_documents(directory: Path) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """Every YAML/JSON document under ``directory`` (recursively, sorted), with file and index."""
    if not directory.is_dir():
        raise ObjectFeedError(f"{directory} is not a directory; pass --objects DIR with YAML manifests")
    files = sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    for path in files:
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as error:
            raise ObjectFeedError(f"{path}: not valid YAML: {error}") from None
        for index, document in enumerate(documents):
            if document is None:
                continue
            if not isinstance(document, dict):
                raise ObjectFeedError(f"{path} document {index}: expected a Kubernetes object (a mapping)")
            if document.get("kind") == "List" and isinstance(document.get("items"), list):
                for item in document["items"]:
                    if isinstance(item, dict):
                        yield path, index, item
                continue
            yield path, index, document


def load_directory(
    directory: Path,
    feed: ObjectFeed,
    *,
    skip_unknown: bool = True,
    strict: bool = False,
    warnings: list[str] | None = None,
) -> int:
    """Feed every cacheable object under ``directory`` into ``feed``; returns how many.

    Each document is read through the one validation path (``scheduler.api.loading``): an invalid
    object stops the load with the webhook's message, file and line (every such object listed);
    unknown fields are appended to ``warnings`` (``strict``: errors); foreign documents are skipped.
    """
    from runtimes.k8s.documents import DocumentError, read_documents
    from scheduler.api.loading import check_document

    if not directory.is_dir():
        raise ObjectFeedError(f"{directory} is not a directory; pass --objects DIR with YAML manifests")
    problems: list[str] = []
    accepted = []
    try:
        for document in read_documents([directory]):
            kind = document.kind
            if skip_unknown and kind not in CACHED_KINDS and kind != "Namespace":
                continue
            check, problem, found = check_document(document, strict=strict)
            if warnings is not None:
                warnings.extend(found)
            if problem is not None:
                problems.append(problem)
            elif check.foreign:
                continue
            else:
                accepted.append(document)
    except DocumentError as error:
        raise ObjectFeedError(str(error)) from None
    if problems:
        raise ObjectFeedError("\n".join(problems))
    for document in accepted:
        try:
            feed.apply(document.data)
        except ObjectFeedError as error:
            raise ObjectFeedError(f"{document.path}:{document.line}: {error}") from None
    feed.mark_loaded()
    return len(accepted)
