"""core/v1 Events about the objects the controllers manage (what `kubectl describe` shows).

Events are best effort, as in client-go's recorder: a failed write is logged, never retried and
never fails a reconcile.
"""

from __future__ import annotations

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


class EventRecorder:
    def __init__(self, client: KubeClient, *, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.clock = clock
        self.sent = 0
        self.failed = 0

    async def record(self, subject: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
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
        try:
            await self.client.create(event)
        except (KubeApiError, aiohttp.ClientError, OSError, TimeoutError) as error:
            self.failed += 1
            log.info("event %s on %s %s not recorded: %s", reason, subject.get("kind"), metadata.get("name"), error)
            return
        self.sent += 1
