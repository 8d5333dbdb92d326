"""core/v1 Events about the objects the controllers manage (what `kubectl describe` shows).

Events are best effort, as in client-go's recorder: sent in the background (a reconcile, or the
queue controller's cycle, never waits on them: on a loaded API server two Events per admitted
Workload held every cycle back), at most ``MAX_IN_FLIGHT`` at once (more are dropped, counted as
failed); a failed write is logged, never retried and never fails a reconcile.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

from scheduler.controllers.conditions import rfc3339
from scheduler.controllers.constants import EVENT_SOURCE
from scheduler.kube import KubeApiError, KubeClient

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
MAX_IN_FLIGHT = 256  # Events being sent at once; client-go's broadcaster drops past its queue too


class EventRecorder:
    def __init__(self, client: KubeClient, *, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.clock = clock
        self.sent = 0
        self.failed = 0
        self._in_flight: set[asyncio.Task[None]] = set()

    async def record(self, subject: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Send an Event about ``subject`` in the background; returns at once."""
        metadata = subject.get("metadata") or {}
        if len(self._in_flight) >= MAX_IN_FLIGHT:
            self.failed += 1
            log.info(
                "event %s on %s %s dropped: %d in flight",
                reason,
                subject.get("kind"),
                metadata.get("name"),
                MAX_IN_FLIGHT,
            )
            return
        event = self._event(subject, event_type, reason, message)  # the subject as it is now
        task = asyncio.get_running_loop().create_task(self._send(event))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def flush(self) -> None:
        """Wait for the Events in flight (a clean shutdown, or a test that reads them at once)."""
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)

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
