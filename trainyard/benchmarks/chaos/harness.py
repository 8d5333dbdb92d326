"""What both chaos runs share: the queues and TrainJobs, their submission, the replica killer, the wait.

Two ClusterQueues in one cohort (borrowing, reclaim and priority preemption all allowed), TrainJobs
of two priorities and random sizes, submitted at a rate (each create retried through faults); a
``Killer`` that stops the controller replica and starts a fresh one every few seconds of its
leading; ``settle`` waits until every job's Workload has finished, as the audit saw it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from typing import Any

from trainyard.benchmarks.chaos.audit import Audit
from trainyard.benchmarks.chaos.diagnostics import NAMESPACE
from trainyard.benchmarks.launch_measures import queue_objects, trainjob

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUES = ("team-a", "team-b")


def chaos_objects(cpu_per_queue: int) -> list[dict[str, Any]]:
    """Two ClusterQueues in one cohort, each with its LocalQueue, and two priority classes."""
    objects = queue_objects(NAMESPACE, cpu=cpu_per_queue, cluster_queue=QUEUES[0])[:3]
    for name in QUEUES:
        cluster_queue = queue_objects(NAMESPACE, cpu=cpu_per_queue, cluster_queue=name)[3]
        cluster_queue["spec"]["cohortName"] = "all"
        cluster_queue["spec"]["preemption"] = {
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "Any",
        }
        objects.append(cluster_queue)
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"clusterQueue": name},
            }
        )
    for name, value in (("low", 10), ("high", 1000)):
        objects.append(
            {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}
        )
    return objects


def chaos_trainjob(index: int, rng: random.Random) -> dict[str, Any]:
    document = trainjob(f"job-{index:05d}", NAMESPACE, nodes=rng.choice((1, 1, 2)), cpu=rng.choice((1, 2, 4)))
    labels = document["metadata"]["labels"]
    labels["kueue.x-k8s.io/queue-name"] = rng.choice(QUEUES)
    labels["kueue.x-k8s.io/priority-class"] = rng.choice(("low", "low", "low", "high"))
    return document


class Killer:
    """Kills the controller replica and starts a fresh one every ``restart_every`` seconds (jittered)."""

    def __init__(self, cluster: Any, replica: Any, restart_every: float, rng: random.Random) -> None:
        self.cluster = cluster
        self.replica = replica
        self.restart_every = restart_every
        self.rng = rng
        self.restarts = 0
        self.healed = 0  # workloads the replicas' resyncs found their engine wrong about
        self.stopped = asyncio.Event()

    async def run(self) -> None:
        while not self.stopped.is_set():
            # The pause counts from when the replica leads (its informers listed everything): a
            # replica killed every few seconds of its working life, whatever the cluster's size.
            # Counted from its start, a cluster whose full list takes longer than the pause would
            # only ever be listed, never admitted, as no real controller is restarted.
            leading = asyncio.create_task(self.replica.service.manager.leading.wait())
            stopped = asyncio.create_task(self.stopped.wait())
            await asyncio.wait([leading, stopped], return_when=asyncio.FIRST_COMPLETED)
            for waiter in (leading, stopped):
                waiter.cancel()
            await asyncio.gather(leading, stopped, return_exceptions=True)
            if self.stopped.is_set():
                return
            pause = self.rng.uniform(0.5, 1.5) * self.restart_every
            try:
                await asyncio.wait_for(self.stopped.wait(), pause)
                return
            except TimeoutError:
                self.healed += self.replica.service.queue.queue.healed
                self.replica = await self.cluster.restart(self.replica)
            self.restarts += 1


async def submit(
    client: Any, args: argparse.Namespace, rng: random.Random, started: float, names: list[str]
) -> list[str]:
    """Create ``args.jobs`` TrainJobs at ``args.rate`` per second (each create retried through
    faults); ``names`` grows as they are created."""
    from scheduler.kube import create_unless_exists

    for index in range(args.jobs):
        delay = started + index / args.rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        document = chaos_trainjob(index, rng)
        names.append(document["metadata"]["name"])
        # an attempt whose answer was lost (a timeout on a starved machine) may have created it
        await create_unless_exists(client, document, attempts=20, what="create TrainJob")
    return names


async def report_progress(audit: Audit, names: list[str], killer: Killer, every: float, started: float) -> None:
    """A line on stderr every ``every`` seconds: how far the run is, for runs of many minutes."""
    while True:
        await asyncio.sleep(every)
        finished = sum(1 for n in names if audit.workload_of.get(n) in audit.finished)
        print(
            f"chaos: {time.perf_counter() - started:.0f}s: {len(names)} submitted, {len(audit.holding)} admitted now, "
            f"{finished} finished, {killer.restarts} controller restarts",
            file=sys.stderr,
            flush=True,
        )


async def settle(audit: Audit, names: list[str], timeout: float) -> None:
    """Wait until every TrainJob's Workload has finished, or ``timeout`` seconds."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if all(audit.workload_of.get(n) in audit.finished for n in names):
            return
        await asyncio.sleep(0.25)


def fault_kinds(args: argparse.Namespace) -> tuple[str, ...]:
    """The faults ``--fault-kinds`` names (``all``: the five default kinds; also when the option is absent)."""
    from sandbox.apiserver.faults import FAULT_KINDS

    kinds: list[str] = []
    for token in str(getattr(args, "fault_kinds", "all")).split(","):
        token = token.strip()
        kinds.extend(FAULT_KINDS if token == "all" else [token] if token else [])
    return tuple(dict.fromkeys(kinds))
