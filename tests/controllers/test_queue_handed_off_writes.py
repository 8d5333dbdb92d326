"""A cycle's admissions land while the next cycle decides, and nothing decided next overtakes them.

The queue controller awaits a cycle's evictions and hands its admissions off (``HandedOffWrites``):
on a busy API server one slow admission write must not keep freed quota and new arrivals waiting
for the next cycle. The first test holds one admission's write at the server's door and shows a
later arrival admitted meanwhile (before, the cycle awaited every write, so nothing else moved).
The second holds the admission of a job that a later, higher-priority arrival preempts: the
eviction waits for the admission to land, and the server never counts more than the quota.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fakeapi.fixtures import FakeApi
from queue_support import (
    NS,
    CommittedUsage,
    ControllerProcess,
    PatchHook,
    Reader,
    controller,
    is_admitted,
    kube,
    queued,
    seed_queues,
)

from scheduler.engine import WorkloadState
from scheduler.kube import KubeClient
from tests.eventually import eventually

QUOTA_CPU = 4


class HeldAdmissions(PatchHook):
    """A client whose first status write to each Workload owned by a ``held`` TrainJob waits for ``release``."""

    def __init__(self, client: KubeClient, held: set[str]) -> None:
        super().__init__(client)
        self.held = held
        self.release = asyncio.Event()
        self.waiting: set[str] = set()

    async def before_patch(self, kind: str, name: str, patch: Any, *, status: bool) -> None:
        owner = next((job for job in self.held if name.startswith(f"trainjob-{job}-")), None)
        if status and owner is not None and isinstance(patch, dict) and (patch.get("status") or {}).get("admission"):
            self.held.discard(owner)
            self.waiting.add(owner)
            await self.release.wait()
            self.waiting.discard(owner)


@contextlib.asynccontextmanager
async def held_at_the_door(
    fake_api: FakeApi, owner: str
) -> AsyncIterator[tuple[HeldAdmissions, ControllerProcess, CommittedUsage]]:
    """The controller running on a client that holds ``owner``'s admission write, once it waits there."""
    usage = CommittedUsage()
    fake_api.server.store.observers.append(usage.observe)
    async with kube(fake_api) as plain:
        client = HeldAdmissions(plain, {owner})
        async with controller(client) as process:
            await eventually(lambda: owner in client.waiting, what=f"the {owner} job's admission at the door")
            yield client, process, usage


async def _admitted(reader: Reader, owner: str) -> bool:
    return any(
        w["metadata"]["ownerReferences"][0]["name"] == owner and is_admitted(w) for w in await reader.workloads()
    )


async def test_a_later_arrival_is_admitted_while_an_earlier_admission_is_still_being_written(
    fake_api: FakeApi, reader: Reader
) -> None:
    seed_queues(fake_api, cpu=QUOTA_CPU)
    fake_api.server.seed(queued("slow", "lq", 1, "low"))
    async with held_at_the_door(fake_api, "slow") as (client, process, usage):
        await client.create(queued("quick", "lq", 1, "low"))
        await eventually(lambda: _admitted(reader, "quick"), what="the later job admitted meanwhile")
        assert not await _admitted(reader, "slow")
        assert process.built.queue.handed_off.busy(next(iter(_keys(process, "slow"))))
        client.release.set()
        await eventually(lambda: _admitted(reader, "slow"), what="the held admission landing")
    assert usage.peak <= 2


async def test_an_eviction_waits_for_the_admission_it_takes_back(fake_api: FakeApi, reader: Reader) -> None:
    seed_queues(fake_api, cpu=QUOTA_CPU, preemption="LowerPriority")
    fake_api.server.seed(queued("low", "lq", QUOTA_CPU, "low"))
    async with held_at_the_door(fake_api, "low") as (client, process, usage):
        await client.create(queued("high", "lq", QUOTA_CPU, "high"))
        # the engine counts the low job admitted and preempts it for the high one; the
        # eviction waits for the low job's admission to land, and the preemptor for the eviction
        await eventually(lambda: _engine_admitted(process, "high"), what="the cycle deciding the preemption")
        await asyncio.sleep(0.5)
        assert not await _admitted(reader, "high")
        assert "low" in client.waiting
        client.release.set()
        await eventually(lambda: _admitted(reader, "high"), what="the preemptor admitted after the eviction")
    low = next(w for w in await reader.workloads() if w["metadata"]["ownerReferences"][0]["name"] == "low")
    assert not (low.get("status") or {}).get("admission")  # admitted, then preempted: both written, in order
    assert usage.peak <= QUOTA_CPU


def _keys(process: Any, owner: str) -> list[str]:
    return [
        f"{NS}/{w['metadata']['name']}"
        for w in process.manager.cache.list("Workload", NS)
        if w["metadata"]["ownerReferences"][0]["name"] == owner
    ]


def _engine_admitted(process: Any, owner: str) -> bool:
    engine = process.built.queue.engine
    infos = [engine.workload(key) for key in _keys(process, owner)]
    return any(info is not None and info.state is WorkloadState.ADMITTED for info in infos)
