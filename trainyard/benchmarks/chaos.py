"""`trainyard bench chaos`: TrainJobs through the controllers while the API server misbehaves and
the controller is killed, then an audit of what the API server recorded.

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
import sys
import time
from typing import TYPE_CHECKING, Any

from trainyard.benchmarks.chaos_audit import Audit
from trainyard.benchmarks.chaos_diagnostics import NAMESPACE, lost_job_story, replica_state
from trainyard.benchmarks.launch_measures import queue_objects, trainjob

if TYPE_CHECKING:  # the harness pulls in aiohttp and kubernetes-asyncio: only when a benchmark runs
    from sandbox.apiserver import FakeApiServer
    from sandbox.apiserver.records import StoredEvent

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUES = ("team-a", "team-b")
MERGE_PATCH = "application/merge-patch+json"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=int, default=1000, help="TrainJobs to submit (default 1,000)")
    parser.add_argument("--rate", type=float, default=100.0, help="TrainJobs submitted per second (default 100)")
    parser.add_argument("--fault-rate", type=float, default=0.03, help="share of requests that meet a fault")
    parser.add_argument(
        "--fault-kinds",
        default="all",
        help="comma-separated faults to draw from: conflict, expire, throttle, server-error, drop (all: these "
        "five, the default), and answer-lost (a write served, its answer cut: drawn only when named)",
    )
    parser.add_argument("--restart-every", type=float, default=3.0, help="seconds between controller kills")
    parser.add_argument("--cpu-per-queue", type=int, default=24, help="each ClusterQueue's nominal CPU quota")
    parser.add_argument(
        "--compaction-every",
        type=float,
        default=10.0,
        help="least seconds between expired histories, after which every informer lists again (default 10)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settle-timeout", type=float, default=600.0, help="seconds to wait for every job")
    parser.add_argument(
        "--progress", type=float, default=30.0, help="seconds between progress lines on stderr (0: none)"
    )


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
        condition = {"type": "Completed", "status": "True", "reason": "AllJobsCompleted", "lastTransitionTime": stamp}
        store.patch(rtype, namespace, name, MERGE_PATCH, {"status": {"conditions": [condition]}}, status=True)

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


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


def fault_kinds(args: argparse.Namespace) -> tuple[str, ...]:
    """The faults ``--fault-kinds`` names (``all``: the five default kinds; also when the option is absent)."""
    from sandbox.apiserver.faults import FAULT_KINDS

    kinds: list[str] = []
    for token in str(getattr(args, "fault_kinds", "all")).split(","):
        token = token.strip()
        kinds.extend(FAULT_KINDS if token == "all" else [token] if token else [])
    return tuple(dict.fromkeys(kinds))


def run(args: argparse.Namespace) -> dict[str, Any]:
    from sandbox.apiserver.faults import FAULT_KINDS, OPT_IN_KINDS

    if args.jobs < 1 or args.rate <= 0 or not 0 <= args.fault_rate < 1:
        raise SystemExit("--jobs must be at least 1, --rate above 0 and --fault-rate in [0, 1)")
    unknown = sorted(set(fault_kinds(args)) - set(FAULT_KINDS) - set(OPT_IN_KINDS))
    if unknown or not fault_kinds(args):
        raise SystemExit(
            f"--fault-kinds: unknown {', '.join(unknown) or '(none given)'}; "
            f"give a comma-separated choice of {', '.join(FAULT_KINDS + OPT_IN_KINDS)}, or all"
        )
    return asyncio.run(measure(args))
