"""Writing a Workload's status: a merge patch at the revision read, and what a failure means.

``WorkloadStatusWriter.write`` patches the status with the Workload's resourceVersion (a
conflict means the cache was behind). After any failure it reads the Workload back, so the
engine never takes a stale cached copy as the truth (an answer lost after commit may have
landed); when the server cannot be reached the mirror is told the answer was lost. A refusal
that says the write itself is wrong (400, 403, 422: retrying it unchanged cannot succeed, unlike
a conflict, a throttle or a server error) is kept for the caller (``refusal``) and logged with the
server's message. Conflicts are routine under load (the cache was behind: a finish, the runner's
or another controller's write landed first) and each is reconciled again, so they are logged one
line per ``CONFLICT_LOG_INTERVAL`` with their count, not one line each.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiohttp

from scheduler.controllers.queueing.engine_mirror import EngineMirror
from scheduler.kube import KubeApiError, KubeClient, patch_status, with_retries

log = logging.getLogger(__name__)

WRITE_ERRORS = (KubeApiError, aiohttp.ClientError, OSError, TimeoutError)
REFUSED = frozenset({400, 403, 422})
REFUSAL_BACKOFF_MAX = 300.0  # seconds an admission refused again and again is held at most
CONFLICT_LOG_INTERVAL = 10.0  # seconds between two lines that count the writes met by a 409


class WorkloadStatusWriter:
    def __init__(self, client: KubeClient, mirror: EngineMirror, concurrency: int) -> None:
        self.client = client
        self.mirror = mirror
        self._writes = asyncio.Semaphore(concurrency)
        self._refusals: dict[str, str] = {}  # key → the server's refusal of its last status write
        self._refused_in_a_row: dict[str, int] = {}  # key → its admissions refused in a row
        self.conflicts = 0  # status writes refused with 409 Conflict, in all
        self._conflicts_untold = 0
        self._conflicts_told_at: float | None = None  # monotonic time of the last line about them

    def refusal(self, key: str) -> str | None:
        """The server's refusal of the last write to ``key``, once (None if it was not refused)."""
        return self._refusals.pop(key, None)

    def backoff_after_refusal(self, key: str) -> tuple[float, bool]:
        """How long to hold ``key`` after its admission was refused as invalid (1 s, doubling, at
        most ``REFUSAL_BACKOFF_MAX``), and whether this refusal is the first in a row."""
        count = self._refused_in_a_row.get(key, 0) + 1
        self._refused_in_a_row[key] = count
        return min(REFUSAL_BACKOFF_MAX, 2.0 ** (count - 1)), count == 1

    def admitted(self, key: str) -> None:
        """``key``'s admission landed: the next refusal is a first one again."""
        self._refused_in_a_row.pop(key, None)

    async def write(self, key: str, document: dict[str, Any], status: dict[str, Any]) -> bool:
        """Merge-patch the Workload's status at the revision read; False on any failure."""
        metadata = document.get("metadata") or {}
        name, namespace = str(metadata.get("name")), metadata.get("namespace")
        self.mirror.writing.add(key)
        try:
            async with self._writes:
                written = await patch_status(
                    self.client,
                    "Workload",
                    name,
                    namespace,
                    status,
                    resource_version=str(metadata.get("resourceVersion")),
                )
        except WRITE_ERRORS as error:
            if isinstance(error, KubeApiError) and error.status in REFUSED:
                self._refusals[key] = str(error)
                log.warning("the API server refused the status of Workload %s: %s", key, error)
            elif isinstance(error, KubeApiError) and error.status == 409:
                self._conflict(key)
            else:
                log.info("status of Workload %s not written (%s); the next cycle reconciles it again", key, error)
            if not await self._read_back(key, name, namespace):
                self.mirror.lost_answer(key, metadata.get("resourceVersion"))
            return False
        finally:
            self.mirror.writing.discard(key)
        self.mirror.learned(key, written)
        return True

    def _conflict(self, key: str) -> None:
        self.conflicts += 1
        self._conflicts_untold += 1
        log.debug("status of Workload %s met a conflict; the next cycle reconciles it again", key)
        now = time.monotonic()
        if self._conflicts_told_at is None or now - self._conflicts_told_at >= CONFLICT_LOG_INTERVAL:
            log.info(
                "%d Workload status write(s) met a conflict (the cache was behind) since the last such line, "
                "the latest on %s; each is reconciled again",
                self._conflicts_untold,
                key,
            )
            self._conflicts_untold = 0
            self._conflicts_told_at = now

    async def _read_back(self, key: str, name: str, namespace: str | None) -> bool:
        """After a failed write, the Workload as the server has it now; False if it cannot be read.
        An attempt whose answer was lost may have landed (its retry then meets a 409 against
        itself), and a refusal means the cache is behind: either way the engine must not take the
        cached copy as the truth, or it would release quota the server still counts."""
        try:
            current = await with_retries(lambda: self.client.get("Workload", name, namespace), what=f"get {key}")
        except KubeApiError as error:
            return error.status == 404  # deleted: the cache's deletion event says the rest
        except WRITE_ERRORS:
            return False  # unreachable: whether the write landed is unknown
        self.mirror.learned(key, current)
        return True
