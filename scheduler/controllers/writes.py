"""Writes of a controller that acts on the cache: counted, idempotent creates and deletes, and a
guard against a stale cache (the launcher's, the ungater's and the topology check's).

Reconcilers act on the cache, which shows a write only once its watch event arrives. A reconcile
that runs in between would act on the object as it was before the write and earn a 409; so
``ObjectWrites`` remembers the resourceVersion each update replaced, and ``stale`` says the
cache still shows it (controller-runtime users know this as "expectations").
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from scheduler.controllers.manager import object_key
from scheduler.kube import KubeApiError, KubeClient, create_unless_exists, with_retries


def resource_version(document: dict[str, Any] | None) -> str:
    return str(((document or {}).get("metadata") or {}).get("resourceVersion", ""))


class ObjectWrites:
    """Every write its controller makes, counted per verb and kind, with create/delete made idempotent.

    It also remembers, per object, the resourceVersion it replaced: until the cache moves past
    it, the cache is behind the controller's own write and must not be acted on (a second start
    from a stale TrainJob would only earn a 409).
    """

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.counts: Counter[str] = Counter()
        self._replaced: dict[tuple[str, str], str] = {}
        # 409s answered to a conditional write. A conflict usually means the cache is behind and
        # its next event re-queues the job, but a 409 need not come with a newer object (a
        # webhook's or a proxy's refusal, an injected fault), so the reconciler looks again itself.
        self.conflicts = 0

    def stale(self, kind: str, document: dict[str, Any]) -> bool:
        key = (kind, object_key(document))
        replaced = self._replaced.get(key)
        if replaced is None:
            return False
        if replaced == resource_version(document):
            return True
        del self._replaced[key]
        return False

    def forget(self, kind: str, key: str) -> None:
        self._replaced.pop((kind, key), None)

    async def create(self, document: dict[str, Any]) -> bool:
        """Create; an object of that name already there (409 AlreadyExists) counts as done. True if created."""
        self.counts[f"create {document['kind']}"] += 1
        return await create_unless_exists(self.client, document)

    async def replace(self, kind: str, document: dict[str, Any]) -> dict[str, Any] | None:
        """PUT with the resourceVersion the document carries; None on 409 (the cache was behind)."""
        before = resource_version(document)
        self.counts[f"update {kind}"] += 1
        try:
            written = await with_retries(lambda: self.client.replace(document), what=f"update {kind}")
        except KubeApiError as error:
            if error.status == 409:
                self.conflicts += 1
                return None
            raise
        self._replaced[(kind, object_key(document))] = before
        return written

    async def patch_status(self, kind: str, document: dict[str, Any], status: dict[str, Any]) -> bool:
        metadata = document.get("metadata") or {}
        body = {"metadata": {"resourceVersion": resource_version(document)}, "status": status}
        self.counts[f"status {kind}"] += 1
        try:
            await with_retries(
                lambda: self.client.patch(kind, str(metadata["name"]), body, metadata.get("namespace"), status=True),
                what=f"update status of {kind}",
            )
        except KubeApiError as error:
            if error.status == 409:
                self.conflicts += 1
                return False
            raise
        self._replaced[(kind, object_key(document))] = resource_version(document)
        return True

    async def delete(self, kind: str, name: str, namespace: str | None) -> None:
        self.counts[f"delete {kind}"] += 1
        try:
            await with_retries(lambda: self.client.delete(kind, name, namespace), what=f"delete {kind}")
        except KubeApiError as error:
            if error.status != 404:
                raise

    def non_status_writes(self) -> int:
        return sum(count for verb, count in self.counts.items() if not verb.startswith("status "))
