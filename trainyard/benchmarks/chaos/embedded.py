"""The chaos benchmark on the embedded API server: TrainJobs through the controllers while the server
misbehaves and the controller is killed, then an audit of what the server recorded.

A ``LocalCluster`` holds two ClusterQueues sharing a cohort (borrowing, reclaim and priority
preemption all allowed). TrainJobs of two priorities arrive at ``--rate`` per second while:

- the API server answers a share ``--fault-rate`` of requests with a fault: 409 on writes,
  429 with Retry-After, 500/503, an expired history (410 for every resuming watch: every
  informer lists again; at most every ``--compaction-every`` seconds), or cut watch connections
  (``sandbox.apiserver.Faults.random``); ``--fault-kinds`` narrows the draw (``conflict``
  alone at a high rate drives the refused-eviction paths hard);
- the controller replica is killed (cancelled wherever it is awaiting) and a fresh one, with a
  new cache and a new engine, started after every ``--restart-every`` seconds (jittered ±50%)
  of leading, that is, once its informers have listed the cluster.

A JobSet stand-in (an observer of the server's store) completes each JobSet after a short
run. After the last arrival the faults go on for a while, then stop, and the benchmark waits
until every Workload has finished. The audit reads every committed write in order, from the
server's store itself (not through any watch, so faults cannot hide a write from it):

- ``lost``: TrainJobs whose Workload never finished;
- ``double_admitted``: a Workload given an admission while it already held one or after it
  finished, or a TrainJob with two JobSets at once;
- ``quota_violations``: committed writes after which the admitted usage of a ClusterQueue or
  of the cohort exceeded what the queues allow.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from typing import TYPE_CHECKING, Any

from trainyard.benchmarks.chaos.audit import Audit
from trainyard.benchmarks.chaos.diagnostics import lost_job_story, replica_state
from trainyard.benchmarks.chaos.harness import Killer, chaos_objects, fault_kinds, report_progress, settle, submit

if TYPE_CHECKING:  # the harness pulls in aiohttp and kubernetes-asyncio: only when a benchmark runs
    from sandbox.apiserver import FakeApiServer
    from sandbox.apiserver.records import StoredEvent

MERGE_PATCH = "application/merge-patch+json"


class JobSetFinisher:
    """Stands in for the JobSet controller: each new JobSet reports Completed after a short run."""

    def __init__(self, server: FakeApiServer, rng: random.Random) -> None:
        self.server = server
        self.rng = rng
        self.tasks: set[asyncio.Task[None]] = set()

    def observe(self, event: StoredEvent) -> None:
        if event.rtype.kind == "JobSet" and event.type == "ADDED":
            metadata = event.obj["metadata"]
            task = asyncio.get_running_loop().create_task(
                self._complete(event.rtype, metadata["namespace"], metadata["name"], metadata["uid"])
            )
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _complete(self, rtype: Any, namespace: str, name: str, uid: str) -> None:
        await asyncio.sleep(self.rng.uniform(0.1, 0.6))
        store = self.server.store
        try:
            current = store.get(rtype, namespace, name)
        except Exception:  # deleted meanwhile (the job was evicted): nothing ran to completion
            return
        if current["metadata"].get("uid") != uid:
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        condition = {
            "type": "Completed",
            "status": "True",
            "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",  # JobSet's CRD requires it, as the JobSet controller writes it
            "lastTransitionTime": stamp,
        }
        store.patch(rtype, namespace, name, MERGE_PATCH, {"status": {"conditions": [condition]}}, status=True)

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def _chaos_then_calm(
    cluster: Any, args: argparse.Namespace, rng: random.Random, started: float, names: list[str], killer: Killer
) -> None:
    """Submit every job with faults and kills going on, a while longer, then calm the server."""
    killing = asyncio.create_task(killer.run())
    cluster.server.faults.random(
        args.fault_rate, seed=args.seed, kinds=fault_kinds(args), compaction_interval=args.compaction_every
    )
    try:
        await submit(cluster.client, args, rng, started, names)
        await asyncio.sleep(min(args.restart_every * 2, 10.0))  # chaos goes on a while after the last arrival
    finally:
        killer.stopped.set()
        await killing
    cluster.server.faults.calm()


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    from sandbox.embedded import LocalCluster

    rng = random.Random(args.seed)
    audit = Audit(limit_milli=2 * args.cpu_per_queue * 1000, cohort_milli=2 * args.cpu_per_queue * 1000)
    started = time.perf_counter()
    async with LocalCluster(chaos_objects(args.cpu_per_queue)) as cluster:
        finisher = JobSetFinisher(cluster.server, random.Random(args.seed + 1))
        cluster.server.store.observers.extend([audit.observe, finisher.observe])
        killer = Killer(cluster, await cluster.start_controllers(), args.restart_every, rng)
        names: list[str] = []
        progress = (
            asyncio.create_task(report_progress(audit, names, killer, args.progress, started))
            if args.progress > 0
            else None
        )
        try:
            await _chaos_then_calm(cluster, args, rng, started, names, killer)
            await settle(audit, names, args.settle_timeout)
        finally:
            if progress is not None:
                progress.cancel()
                await asyncio.gather(progress, return_exceptions=True)
        await finisher.stop()
        replica = killer.replica
        lost = [
            f"{n}: "
            + audit.last_state.get(audit.workload_of.get(n, ""), "no Workload was ever created")
            + lost_job_story(cluster, replica, n, audit.workload_of.get(n))
            for n in names
            if audit.workload_of.get(n) not in audit.finished
        ]
        final_state = replica_state(replica) if lost else {}
        injected = sum(cluster.server.faults.injected.values())
    return {
        "jobs": args.jobs,
        "lost": len(lost),
        "double_admitted": len(audit.double_admitted),
        "quota_violations": audit.quota_violations,
        "controller_restarts": killer.restarts,
        "faults_injected": injected,
        "admissions": audit.admissions,
        "resync_healed": killer.healed + replica.service.queue.queue.healed,
        "wall_seconds": round(time.perf_counter() - started, 2),
        "examples": sorted(audit.double_admitted)[:5] + audit.violation_examples + lost[:20],
        "final_replica": final_state,
    }
