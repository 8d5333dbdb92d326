"""What a reconcile is about, as controller-runtime's ``reconcile.Request``: small typed values.

Most reconcilers converge one object and take its key ("namespace/name", or "name" when
cluster-scoped). A reconciler that answers for several kinds of thing takes one of these instead
of a string with a prefix: the queue controller (a cycle, a resync, a failed Node, a gang's pods)
and the topology check (a Workload, a failed Node). Each is a frozen dataclass, so equal requests
hash alike and the work queue's promise holds as for string keys: the same request queued twice
while it waits is reconciled once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CycleRequest:
    """Run an admission cycle of the engine and write its decisions."""

    def __str__(self) -> str:
        return "admission cycle"


@dataclass(frozen=True, slots=True)
class ResyncRequest:
    """Compare the engine with the cached Workloads (in the next cycle) and heal where they differ."""

    def __str__(self) -> str:
        return "resync"


@dataclass(frozen=True, slots=True)
class NodeRequest:
    """A Node turned NotReady or went away: the gangs placed on it are handled."""

    name: str

    def __str__(self) -> str:
        return f"Node {self.name}"


@dataclass(frozen=True, slots=True)
class WorkloadRequest:
    """One Workload, by namespace and name."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """The Workload's "namespace/name" (the engine's and the cache's key)."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, document: dict[str, Any]) -> WorkloadRequest:
        metadata = document.get("metadata") or {}
        return cls(str(metadata.get("namespace") or "default"), str(metadata.get("name", "")))

    @classmethod
    def parse(cls, key: str) -> WorkloadRequest:
        namespace, _, name = key.partition("/")
        return cls(namespace, name)

    def __str__(self) -> str:
        return f"Workload {self.key}"


@dataclass(frozen=True, slots=True)
class WorkloadPodsRequest:
    """The pods of one Workload's gang changed: its PodsReady is worked out again."""

    workload: WorkloadRequest

    def __str__(self) -> str:
        return f"pods of {self.workload}"


CYCLE = CycleRequest()
RESYNC = ResyncRequest()

# What the queue controller reconciles, and what the topology check reconciles.
QueueRequest = CycleRequest | ResyncRequest | NodeRequest | WorkloadPodsRequest
CheckRequest = WorkloadRequest | NodeRequest
