"""The queue controller under restarts, failover, failed writes and finishing jobs: it converges,
never admits twice and never lets admitted usage exceed the quota on the server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fakeapi.fixtures import FakeApi
from queue_support import (
    FAST_INFORMERS,
    NS,
    Reader,
    condition,
    controller,
    is_admitted,
    kube,
    seed_queues,
    start_controller,
    trainjob,
)

from scheduler.kube import Informer, KubeClient
from tests.eventually import eventually


class QuotaAudit:
    """Watches Workloads and checks, at every revision the server shows, admitted cpu <= quota."""

    def __init__(self, quota: int) -> None:
        self.quota = quota
        self.objects: dict[str, dict[str, Any]] = {}
        self.peak = 0
        self.violations: list[int] = []
        self.admissions: dict[str, int] = {}  # workload -> times it went from not admitted to admitted

    def apply(self, document: dict[str, Any]) -> None:
        name = document["metadata"]["name"]
        before = is_admitted(self.objects.get(name))
        self.objects[name] = document
        if is_admitted(document) and not before:
            self.admissions[name] = self.admissions.get(name, 0) + 1
        self._check()

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.objects.pop(name, None)

    def mark_loaded(self) -> None:
        pass

    def _check(self) -> None:
        used = 0
        for workload in self.objects.values():
            admission = (workload.get("status") or {}).get("admission")
            if admission and not _finished(workload):
                used += sum(int(a["resourceUsage"]["cpu"]) for a in admission["podSetAssignments"])
        self.peak = max(self.peak, used)
        if used > self.quota:
            self.violations.append(used)

    def admitted(self) -> set[str]:
        return {name for name, w in self.objects.items() if is_admitted(w) and not _finished(w)}


def _finished(workload: dict[str, Any]) -> bool:
    c = condition(workload, "Finished")
    return c is not None and c["status"] == "True"


@contextlib.asynccontextmanager
async def audited(client: KubeClient, quota: int) -> AsyncIterator[QuotaAudit]:
    audit = QuotaAudit(quota)
    informer = Informer(client, "Workload", audit, settings=FAST_INFORMERS)
    task = asyncio.create_task(informer.run())
    try:
        yield audit
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def complete(client: KubeClient, name: str) -> None:
    """Play the launcher's part: the TrainJob's JobSet finished."""
    job = await client.get("TrainJob", name, NS)
    status = {
        "conditions": [
            {
                "type": "Complete",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    await client.patch("TrainJob", name, {"status": status}, NS, status=True)
    assert job["metadata"]["name"] == name


@pytest.mark.parametrize("kill_after", [0.0, 0.05, 0.15, 0.4], ids=lambda s: f"killed-after-{s}s")
async def test_restarts_converge_without_double_admission_or_overcommit(
    fake_api: FakeApi, reader: Reader, kill_after: float
) -> None:
    seed_queues(fake_api, cpu=3)
    for index in range(6):
        fake_api.server.seed(trainjob(f"job-{index}", nodes=1))
    async with kube(fake_api) as client, audited(client, quota=3) as audit:
        for _ in range(3):
            process = start_controller(client)
            await asyncio.sleep(kill_after)
            await process.stop()
        async with controller(client):
            await eventually(lambda: len(audit.admitted()) == 3, what="three admissions")
            await asyncio.sleep(0.3)
            assert len(audit.admitted()) == 3
            # finishing the admitted jobs lets the others in
            for name in sorted(audit.admitted()):
                owner = audit.objects[name]["metadata"]["ownerReferences"][0]["name"]
                await complete(client, owner)
            await eventually(
                lambda: len(audit.admitted()) == 3 and sum(_finished(w) for w in audit.objects.values()) == 3,
                what="the other three admitted after the first three finished",
            )
    workloads = await reader.workloads()
    assert len(workloads) == 6  # one per TrainJob, never a second
    assert sorted(o["name"] for w in workloads for o in w["metadata"]["ownerReferences"]) == [
        f"job-{i}" for i in range(6)
    ]
    assert audit.violations == []
    assert audit.peak == 3
    assert all(count == 1 for count in audit.admissions.values()), audit.admissions
    finished = [w for w in workloads if _finished(w)]
    assert all(condition(w, "Finished")["reason"] == "Succeeded" for w in finished)  # type: ignore[index]


async def test_a_failed_admission_write_releases_the_engine_quota(fake_api: FakeApi, reader: Reader) -> None:
    seed_queues(fake_api, cpu=1)
    fake_api.server.seed(trainjob("a", nodes=1))
    # the first two admission writes meet a conflict: each time the engine must forget that
    # decision, or its own leaked reservation would keep the job out of the one-cpu queue
    fake_api.faults.fail("patch", "/workloads/", code=409, times=2)
    async with kube(fake_api) as client, audited(client, quota=1) as audit, controller(client) as process:
        await eventually(lambda: len(audit.admitted()) == 1, what="the admission")
        await asyncio.sleep(0.3)
        cq = process.built.queue.engine.model.cluster_queues["cq"]
        used = sum(cq.node.usage.values())
    assert len(fake_api.faults.failed) == 2
    assert audit.violations == []
    assert used == 1000  # one job's cpu in milli-units: nothing leaked by the failed writes
    assert audit.admissions == {next(iter(audit.objects)): 1}


async def test_the_standby_takes_over_when_the_leader_dies(fake_api: FakeApi, reader: Reader) -> None:
    seed_queues(fake_api, cpu=4)
    fake_api.server.seed(trainjob("before", nodes=1))
    async with kube(fake_api) as client, audited(client, quota=4) as audit:
        one = start_controller(client, identity="one")
        two = start_controller(client, identity="two")
        try:
            await eventually(lambda: "before" in {_owner(w) for w in audit.objects.values() if is_admitted(w)})
            leader, standby = (one, two) if one.manager.leading.is_set() else (two, one)
            assert not standby.manager.leading.is_set()
            assert standby.built.queue.cycles == 0  # a standby runs no admission
            await leader.stop()
            fake_api.server.seed(trainjob("after", nodes=1))
            await eventually(
                lambda: "after" in {_owner(w) for w in audit.objects.values() if is_admitted(w)},
                what="the standby admitting",
            )
            assert standby.manager.leading.is_set()
        finally:
            await one.stop()
            await two.stop()
    assert audit.violations == []
    assert all(count == 1 for count in audit.admissions.values())


def _owner(workload: dict[str, Any]) -> str:
    return str(workload["metadata"]["ownerReferences"][0]["name"])
