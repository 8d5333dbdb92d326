"""What the stand-ins add to ``scheduler.controllers``: object keys, their queue's backoff, conflicts.

Keys are the framework's ("namespace/name", or "name" when cluster-scoped); ``split_key`` turns
one back into the cache's (namespace, name). The stand-ins' queues back off from 50ms to 2s, so
a server injecting faults slows them down without stalling a test for a minute. A 409 is a write
based on a cache that is behind: the newer object's event requeues the key, and ``reconciled``
asks for another look shortly after for a conflict with no newer object (an injected one),
without growing the key's backoff or logging a failure.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.manager import object_key
from scheduler.controllers.runtime import ReconcileResult
from scheduler.controllers.workqueue import WorkQueue
from scheduler.kube import KubeApiError, KubeClient

CONFLICT_RETRY_SECONDS = 0.05
BATCH_SECONDS = 0.1

__all__ = [
    "BATCH_SECONDS",
    "CONFLICT_RETRY_SECONDS",
    "BatchingStandin",
    "Standin",
    "controller_uid",
    "object_key",
    "reconciled",
    "split_key",
    "standin_queue",
]


class Standin:
    """What every stand-in controller has: a client, the cache, and its own work queue."""

    name = "standin"

    def __init__(self, client: KubeClient, cache: ClusterCache, *, workers: int = 4) -> None:
        self.workers = workers
        self.queue = standin_queue(self.name)
        self.client = client
        self.cache = cache


class BatchingStandin(Standin):
    """A workload stand-in (Job, JobSet): a stand-in with a batch window over its children's changes."""

    def __init__(
        self, client: KubeClient, cache: ClusterCache, *, workers: int = 4, batch_seconds: float = BATCH_SECONDS
    ) -> None:
        super().__init__(client, cache, workers=workers)
        # changes of children are gathered this long into one sync, as the real controllers batch pod updates
        self.batch_seconds = batch_seconds


def standin_queue(name: str) -> WorkQueue[str]:
    return WorkQueue(base_delay=0.05, max_delay=2.0, name=name)


def split_key(key: str) -> tuple[str | None, str]:
    """The (namespace, name) of a reconcile key; namespace None for a cluster-scoped object."""
    namespace, slash, name = key.partition("/")
    return (namespace or None, name) if slash else (None, key)


def controller_uid(obj: dict[str, Any] | None) -> str | None:
    """The uid of the object's controller owner (``ownerReferences[].controller: true``)."""
    if obj is None:
        return None
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return str(reference.get("uid"))
    return None


async def reconciled(work: Awaitable[float | None]) -> ReconcileResult:
    """Await one reconcile's work (seconds until it wants another look, or None); a 409 retries soon."""
    try:
        return ReconcileResult(requeue_after=await work)
    except KubeApiError as error:
        if error.status != 409:
            raise
        return ReconcileResult(requeue_after=CONFLICT_RETRY_SECONDS)
