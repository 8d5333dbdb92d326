"""The controllers killed right after each write they make, one write at a time: every run
converges to every job finished, with no Workload admitted twice, no second JobSet, and the
admitted usage within quota at every committed write.

The kill happens inside the API server's commit of the N-th write (a store observer cancels
the replica's task), so the replica never sees the answer to the write it just made: the
fresh replica must take it from the server alone.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from sandbox.apiserver.records import StoredEvent
from sandbox.embedded import LocalCluster
from trainyard.benchmarks.chaos.audit import Audit
from trainyard.benchmarks.chaos.embedded import JobSetFinisher
from trainyard.benchmarks.controller import queue_objects, trainjob

NAMESPACE = "steps"
CONTROLLER_KINDS = {"Workload", "PodGroup", "JobSet", "TrainJob"}
JOBS = ("first", "second")  # one CPU each, one CPU of quota: the second waits for the first


async def settle(audit: Audit, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(audit.workload_of.get(name) in audit.finished for name in JOBS):
        if time.monotonic() > deadline:
            raise AssertionError(f"not every job finished: {audit.last_state}")
        await asyncio.sleep(0.05)


@pytest.mark.slow
# A whole run is 20 writes or more (two Workloads created, suspended TrainJobs, admissions,
# PodGroups, JobSets, unsuspends, status mirrors, Finished; 21 when the first cycle sees both
# Workloads and writes the second's pending status): a kill at each of the first 20.
@pytest.mark.parametrize("kill_after", range(1, 21), ids=lambda n: f"killed-at-write-{n}")
async def test_killed_at_each_write_converges_without_double_admission(kill_after: int) -> None:
    objects: list[dict[str, Any]] = [*queue_objects(NAMESPACE, cpu=1), *(trainjob(n, NAMESPACE) for n in JOBS)]
    audit = Audit(limit_milli=1000, cohort_milli=1000)
    async with LocalCluster(objects) as cluster:
        finisher = JobSetFinisher(cluster.server, random.Random(kill_after))
        replica = await cluster.start_controllers()
        writes = 0
        killed = asyncio.Event()

        def kill_at_write(event: StoredEvent) -> None:
            nonlocal writes
            # the seeded objects are in the store already; every write of these kinds now is the controllers'
            if event.rtype.kind not in CONTROLLER_KINDS or killed.is_set():
                return
            writes += 1
            if writes == kill_after:
                replica.task.cancel()  # before the answer leaves the server
                killed.set()

        cluster.server.store.observers.extend([audit.observe, finisher.observe, kill_at_write])
        await asyncio.wait_for(killed.wait(), timeout=30.0)
        replica = await cluster.restart(replica)
        await settle(audit)
        await finisher.stop()
    assert audit.double_admitted == set()
    assert audit.quota_violations == 0
    assert dict(audit.jobsets) == dict.fromkeys(JOBS, 1)  # one JobSet each, never a second
    assert audit.admissions == len(JOBS)
