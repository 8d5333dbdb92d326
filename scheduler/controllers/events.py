"""core/v1 Events about the objects the controllers manage (what `kubectl describe` shows).

Events are best effort, as in client-go's recorder. While its controllers run, the recorder's
``run`` (started beside their workers, cancelled with them) sends queued Events one at a time, as
client-go's broadcaster does: a reconcile, or the queue controller's cycle, never waits on them
(on a loaded API server two Events per admitted Workload held every cycle back), and a burst of
Events does not crowd the API server while the writes that admit and launch jobs wait. At most
``MAX_QUEUED`` wait (client-go's ``maxQueuedEvents``); more are dropped, counted as failed. With
no sender running (a reconcile called on its own) an Event is sent before ``record`` returns. A
failed write is logged, never retried and never fails a reconcile.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.conditions import rfc3339
from scheduler.controllers.constants import EVENT_SOURCE
from scheduler.controllers.views import WorkloadView
from scheduler.kube import KubeApiError, KubeClient

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
MAX_QUEUED = 1000  # Events waiting to be sent; client-go's broadcaster drops past its queue too


class EventRecorder:
    def __init__(self, client: KubeClient, *, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.clock = clock
        self.sent = 0
        self.failed = 0
        self._queued: deque[dict[str, Any]] = deque()
        self._dropping = 0  # Events dropped since the queue last filled (told once it drains)
        self._wake: asyncio.Event | None = None  # set while ``run`` sends; None when no sender runs

    async def run(self) -> None:
        """Send queued Events one at a time until cancelled; what is still queued then is dropped
        (a replica that lost its lease stops writing at once)."""
        wake = asyncio.Event()
        self._wake = wake
        try:
            while True:
                while self._queued:
                    event = self._queued.popleft()
                    try:
                        await self._send(event)
                    except Exception:  # a bug in one Event must not stop the sender, nor its controller
                        self.failed += 1
                        log.exception("event %s not recorded", event.get("reason"))
                if self._dropping:
                    log.info("the Event queue drained; %d Events were dropped while it was full", self._dropping)
                    self._dropping = 0
                wake.clear()
                await wake.wait()
        finally:
            if self._wake is wake:  # (a later term's sender may have started already)
                self._wake = None
            self.failed += len(self._queued)
            self._queued.clear()

    @property
    def queued(self) -> int:
        return len(self._queued)

    async def record(self, subject: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Queue an Event about ``subject`` for the sender; returns at once while one runs."""
        if self._wake is not None and len(self._queued) >= MAX_QUEUED:
            self.failed += 1
            if not self._dropping:  # once per burst: a line per dropped Event would be thousands
                log.warning("%d Events wait to be sent; dropping new ones until the queue drains", MAX_QUEUED)
            self._dropping += 1
            return
        event = self._event(subject, event_type, reason, message)  # the subject as it is now
        if self._wake is None:
            await self._send(event)
            return
        self._queued.append(event)
        self._wake.set()

    async def record_on_workload(
        self, cache: ClusterCache, workload: WorkloadView, event_type: str, reason: str, message: str
    ) -> None:
        """An Event on a Workload, and the same on the TrainJob that owns it (what its user watches)."""
        await self.record(workload.document, event_type, reason, message)
        owner_name = workload.owner_trainjob
        owner = cache.get("TrainJob", owner_name, workload.namespace) if owner_name is not None else None
        if owner is not None:
            await self.record(owner, event_type, reason, message)

    def _event(self, subject: Mapping[str, Any], event_type: str, reason: str, message: str) -> dict[str, Any]:
        metadata = subject.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "default")
        stamp = rfc3339(self.clock())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            # kubectl's recorder names an Event after its object plus a unique suffix
            "metadata": {"name": f"{metadata.get('name')}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": subject.get("apiVersion"),
                "kind": subject.get("kind"),
                "name": metadata.get("name"),
                "namespace": namespace,
                "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "type": event_type,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": EVENT_SOURCE},
            "reportingComponent": EVENT_SOURCE,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        return event

    async def _send(self, event: dict[str, Any]) -> None:
        try:
            await self.client.create(event)
        except (KubeApiError, aiohttp.ClientError, OSError, TimeoutError) as error:
            self.failed += 1
            subject = event["involvedObject"]
            log.info("event %s on %s %s not recorded: %s", event["reason"], subject["kind"], subject["name"], error)
            return
        self.sent += 1
