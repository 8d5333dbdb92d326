"""Pending reasons never hold an admission back.

A burst of arrivals gives every new Workload a pending reason to write (QuotaReserved=False).
These are background writes (``HandedOffWrites``): a few at a time, and one not yet sent is
dropped once its Workload is admitted. Here the server holds every reason write at its door;
quota frees up, and the Workload it goes to is admitted while the reasons still wait. Before,
reasons and admissions shared one pool and one per-Workload order: the admission waited behind
its own queued reason for as long as the server held the reasons (on the real kube-apiserver,
at 3,000 arrivals, no admission for ten seconds and more).
"""

from __future__ import annotations

import asyncio
from typing import Any

from builders import WorkloadBuilder
from fakeapi.fixtures import FakeApi
from queue_support import NS, PRIORITIES, PatchHook, Reader, condition, controller, is_admitted, kube, seed_queues

from scheduler.kube import KubeClient
from tests.eventually import eventually

QUOTA_CPU = 4
WAITERS = 6  # more reasons than the background slots (4): some wait for a slot, unsent


class HeldReasons(PatchHook):
    """A client whose pending-reason writes (QuotaReserved=False, no admission) wait for ``release``."""

    def __init__(self, client: KubeClient) -> None:
        super().__init__(client)
        self.release = asyncio.Event()
        self.waiting = 0

    async def before_patch(self, kind: str, name: str, patch: Any, *, status: bool) -> None:
        if status and kind == "Workload" and isinstance(patch, dict) and _is_reason(patch):
            self.waiting += 1
            try:
                await self.release.wait()
            finally:
                self.waiting -= 1


def _is_reason(patch: dict[str, Any]) -> bool:
    conditions = (patch.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "False" for c in conditions)


def _workload(name: str, cpu: int, priority: str, created: int) -> WorkloadBuilder:
    builder = WorkloadBuilder(name, NS).queue("lq").created(created)
    return builder.priority_class(priority).priority(dict(PRIORITIES)[priority]).pod_set(count=cpu, cpu="1")


async def test_an_admission_is_written_while_the_pending_reasons_wait_at_the_door(
    fake_api: FakeApi, reader: Reader
) -> None:
    seed_queues(fake_api, cpu=QUOTA_CPU)
    big = _workload("big", QUOTA_CPU, "low", 0).admitted("cq", {"cpu": "default"}).doc()
    big["status"]["conditions"][0].update(reason="QuotaReserved", message="Quota reserved in ClusterQueue cq")
    fake_api.server.seed(big)
    for index in range(WAITERS):
        fake_api.server.seed(_workload(f"job-{index}", 1, "low", 1 + index).doc())
    # listed last, so its reason is among those still waiting for a slot
    fake_api.server.seed(_workload("urgent", QUOTA_CPU, "high", 10).doc())
    async with kube(fake_api) as plain:
        await plain.patch("Workload", "big", {"status": big["status"]}, NS, status=True)  # holding the quota
        client = HeldReasons(plain)
        async with controller(client):
            await eventually(lambda: client.waiting >= 4, what="the first reasons held at the door")
            await client.delete("Workload", "big", NS)  # its quota frees up for the urgent one
            await eventually(
                lambda: _admitted(reader, "urgent"), what="the urgent Workload admitted while reasons wait"
            )
            assert client.waiting >= 4  # the reasons were still held throughout
            client.release.set()
            await eventually(lambda: _all_told(reader), what="every waiting job's reason written after all")


async def _admitted(reader: Reader, name: str) -> bool:
    return any(w["metadata"]["name"] == name and is_admitted(w) for w in await reader.workloads())


async def _all_told(reader: Reader) -> bool:
    waiting = [w for w in await reader.workloads() if w["metadata"]["name"].startswith("job-")]
    return len(waiting) == WAITERS and all(
        (c := condition(w, "QuotaReserved")) is not None and c["status"] == "False" for w in waiting
    )
