"""Leader election with a coordination.k8s.io/v1 Lease, on the event loop's clock.

One replica holds the Lease and renews it every ``retry_period``; the others watch it and take
over once it has gone unrenewed for ``lease_duration``. Expiry is judged by *when this process
last saw the lease record change* (on ``loop.time()``), never by comparing the holder's
``renewTime`` with our wall clock, so clock skew between nodes cannot steal a lease — the rule
client-go's elector follows. A leader that cannot renew for ``renew_deadline`` stops leading
before anyone else may start (renew_deadline < lease_duration). Every write is a PUT or POST
conditional on the resourceVersion it read, so two candidates never both win.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import aiohttp

from scheduler.kube.client import KubeClient
from scheduler.kube.errors import KubeApiError

log = logging.getLogger(__name__)

LEASE = "Lease"


@dataclass(frozen=True)
class LeaseSettings:
    lease_duration: float = 15.0  # how long a lease is honoured after its last observed renewal
    renew_deadline: float = 10.0  # a leader that has not renewed for this long steps down
    retry_period: float = 2.0  # between attempts to acquire or renew

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs 0 < retry_period < renew_deadline < lease_duration "
                f"(got {self.retry_period}, {self.renew_deadline}, {self.lease_duration})"
            )


def _micro_time() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """``await run()`` campaigns, leads (running ``on_started_leading`` as a task) and returns once it lost."""

    def __init__(
        self,
        client: KubeClient,
        name: str,
        namespace: str,
        identity: str,
        *,
        settings: LeaseSettings | None = None,
        on_started_leading: Callable[[], Coroutine[Any, Any, None]] | None = None,
        release_on_cancel: bool = True,
    ) -> None:
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.settings = settings or LeaseSettings()
        self.on_started_leading = on_started_leading
        self.release_on_cancel = release_on_cancel
        self.leading = asyncio.Event()
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not await self._attempt():
            await asyncio.sleep(self.settings.retry_period)
        log.info("%s acquired lease %s/%s", self.identity, self.namespace, self.name)
        self.leading.set()
        work: asyncio.Task[None] | None = (
            asyncio.create_task(self.on_started_leading()) if self.on_started_leading is not None else None
        )
        try:
            renewed_at = loop.time()
            while loop.time() - renewed_at < self.settings.renew_deadline:
                await asyncio.sleep(self.settings.retry_period)
                if await self._attempt():
                    renewed_at = loop.time()
            log.warning(
                "%s lost lease %s/%s: not renewed within the deadline", self.identity, self.namespace, self.name
            )
        except asyncio.CancelledError:
            if self.release_on_cancel:
                with contextlib.suppress(KubeApiError, aiohttp.ClientError, OSError, TimeoutError):
                    await self._release()
            raise
        finally:
            self.leading.clear()
            if work is not None and not work.done():
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work

    async def _attempt(self) -> bool:
        """Acquire or renew once; False when someone else validly holds it or the API failed."""
        try:
            return await self._acquire_or_renew()
        except (KubeApiError, aiohttp.ClientError, OSError, TimeoutError) as error:
            log.info("%s: lease %s/%s: %s", self.identity, self.namespace, self.name, error)
            return False

    async def _acquire_or_renew(self) -> bool:
        loop = asyncio.get_running_loop()
        now = _micro_time()
        try:
            lease = await self.client.get(LEASE, self.name, self.namespace)
        except KubeApiError as error:
            if error.status != 404:
                raise
            await self.client.create(self._new_lease(now))
            self._observe(("created",), loop.time())
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("leaseTransitions"), spec.get("leaseDurationSeconds"))
        if record != self._observed:
            self._observe(record, loop.time())
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        if holder and holder != self.identity and loop.time() < self._observed_at + duration:
            return False  # someone else holds it and it has not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        lease["spec"] = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._duration_seconds(),
            "renewTime": now,
            "acquireTime": spec.get("acquireTime") if holder == self.identity else now,
            "leaseTransitions": transitions if holder == self.identity else transitions + 1,
        }
        try:
            await self.client.replace(lease)  # carries the resourceVersion just read: a 409 if anyone wrote since
        except KubeApiError as error:
            if error.status == 409:
                return False
            raise
        self._observe(("renewed", now), loop.time())
        return True

    def _duration_seconds(self) -> int:
        return max(1, round(self.settings.lease_duration))  # the API field is whole seconds

    def _observe(self, record: tuple[Any, ...], at: float) -> None:
        self._observed = record
        self._observed_at = at

    def _new_lease(self, now: str) -> dict[str, Any]:
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": LEASE,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._duration_seconds(),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }

    async def _release(self) -> None:
        """Give the lease up at once (holder emptied) so another replica need not wait for expiry."""
        lease = await self.client.get(LEASE, self.name, self.namespace)
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return
        lease["spec"] = {**spec, "holderIdentity": None, "renewTime": _micro_time()}
        await self.client.replace(lease)
