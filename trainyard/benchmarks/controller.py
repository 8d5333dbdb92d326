"""`trainyard bench controller`: TrainJobs from creation to JobSet created, through the real controllers.

A ``LocalCluster`` (the sandbox API server on loopback) holds one ClusterQueue with room for
every job, and trainyard's controller service runs against it over HTTP. The benchmark creates
``--jobs`` TrainJobs at ``--rate`` per second, as a client would, and times each one from just
before its create request to the moment the API server commits its JobSet (an in-process
observer of the server's store, so the clock does not wait for any watch). Everything shares
one event loop on one core: the latencies include the client's and the server's own work.

Writes are counted from the server's request log, by what they touch: object writes (creates,
updates, patches and deletes of Workloads, JobSets, PodGroups, TrainJobs...), status writes,
Events and Lease renewals; ``object_writes_by_kind`` splits the object writes per resource.
The target is at most 4 object writes per admitted job: a torch job (``--runtime
torch_distributed``, the default) makes exactly 4 (Workload, PodGroup, JobSet, the TrainJob's
unsuspend). An MPI job (``--runtime deepspeed_distributed``) also needs the MPI Secret (SSH
keys) and ConfigMap (hostfile) that Kubeflow Trainer would create, so it makes 6: the bench
reports them per kind rather than hiding them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainyard.benchmarks.launch_measures import (
    NAMESPACE,
    RUNTIMES,
    owner_name,
    per_job_writes,
    percentile,
    queue_objects,
    trainjob,
)

if TYPE_CHECKING:  # the harness pulls in aiohttp and kubernetes-asyncio: only when a benchmark runs
    from sandbox.apiserver import FakeApiServer
    from sandbox.apiserver.records import StoredEvent

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=int, default=300, help="TrainJobs to create (default 300)")
    parser.add_argument("--rate", type=float, default=50.0, help="TrainJobs created per second (default 50)")
    parser.add_argument(
        "--runtime",
        choices=sorted(RUNTIMES),
        default="torch_distributed",
        help="bundled runtime the TrainJobs use: torch (default) or DeepSpeed over MPI (adds a Secret and a ConfigMap)",
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="also run on a real kube-apiserver and etcd (built by `make cluster-tools`): both figures in one JSON",
    )
    parser.add_argument(
        "--binaries",
        type=Path,
        metavar="DIR",
        help="with --real: where the component binaries are (default: the cache)",
    )


def written_resource(path: str) -> str:
    """The resource (plural) a write request's path names: /api/v1/namespaces/NS/secrets/NAME -> secrets."""
    parts = [part for part in path.split("/") if part]
    if "namespaces" in parts[:-1]:
        index = parts.index("namespaces") + 2  # the resource follows the namespace's name
        if index < len(parts):
            return parts[index]
    return parts[3] if parts[:1] == ["apis"] and len(parts) > 3 else parts[2] if len(parts) > 2 else path


def write_counts(server: FakeApiServer) -> Counter[str]:
    """The server's write requests so far, by what they touch; object writes also as ``object:RESOURCE``."""
    counts: Counter[str] = Counter()
    for request in server.requests:
        if request.method not in WRITE_METHODS:
            continue
        if "/leases" in request.path:
            counts["lease"] += 1
        elif "/events" in request.path:
            counts["event"] += 1
        elif request.path.endswith("/status"):
            counts["status"] += 1
            counts[f"status:{request.method} {written_resource(request.path.removesuffix('/status'))}"] += 1
        else:
            counts["object"] += 1
            counts[f"object:{request.method} {written_resource(request.path)}"] += 1
    return counts


class LaunchClock:
    """An observer of the server's store: when each TrainJob's JobSet was committed, and which
    TrainJobs have been unsuspended (the launcher's last write for a job)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.launched_at: dict[str, float] = {}
        self.resumed: set[str] = set()
        self.all_launched = asyncio.Event()
        self.all_resumed = asyncio.Event()

    def observe(self, event: StoredEvent) -> None:
        if event.rtype.kind == "TrainJob" and (event.obj.get("spec") or {}).get("suspend") is False:
            self.resumed.add(str(event.obj["metadata"]["name"]))
            if len(self.resumed) >= self.jobs:
                self.all_resumed.set()
        elif event.rtype.kind == "JobSet" and event.type == "ADDED":
            owner = owner_name(event.obj)
            if owner is not None and owner not in self.launched_at:
                self.launched_at[owner] = time.perf_counter()
                if len(self.launched_at) >= self.jobs:
                    self.all_launched.set()


async def measure(jobs: int, rate: float, runtime: str = "torch_distributed") -> dict[str, Any]:
    from sandbox.embedded import LocalCluster

    created_at: dict[str, float] = {}
    clock = LaunchClock(jobs)
    async with LocalCluster(queue_objects(NAMESPACE, cpu=4 * jobs + 1, runtime=runtime)) as cluster:
        cluster.server.store.observers.append(clock.observe)
        replica = await cluster.start_controllers()
        await replica.service.manager.leading.wait()
        before = write_counts(cluster.server)
        started = time.perf_counter()
        for index in range(jobs):
            delay = started + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            name = f"job-{index:05d}"
            created_at[name] = time.perf_counter()
            await cluster.client.create(trainjob(name, NAMESPACE, runtime=RUNTIMES[runtime]))
        await asyncio.wait_for(clock.all_launched.wait(), timeout=max(60.0, jobs / rate * 5))
        wall = time.perf_counter() - started
        # The TrainJob's unsuspend follows its JobSet: wait for it, so the write counts are whole.
        await asyncio.wait_for(clock.all_resumed.wait(), timeout=60.0)
        writes = write_counts(cluster.server) - before
    writes["object"] -= jobs  # the benchmark's own TrainJob creates
    writes["object:POST trainjobs"] -= jobs
    latencies = [(clock.launched_at[name] - created_at[name]) * 1000.0 for name in created_at]
    return {
        "jobs": jobs,
        "runtime": runtime,
        "rate_per_s": rate,
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2),
        **per_job_writes(writes, jobs),
        "wall_seconds": round(wall, 2),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.jobs < 1 or args.rate <= 0:
        raise SystemExit("--jobs must be at least 1 and --rate above 0")
    embedded = asyncio.run(measure(args.jobs, args.rate, args.runtime))
    if not args.real:
        return embedded
    from trainyard.benchmarks.controller_real import measure_real

    real = asyncio.run(measure_real(args.jobs, args.rate, args.runtime, args.binaries))
    return {"jobs": args.jobs, "rate_per_s": args.rate, "runtime": args.runtime, "real": real, "embedded": embedded}
