"""`trainyard bench controller --real`: the same launch figures on a real kube-apiserver and etcd.

The real cluster runs only what the measured path touches (etcd and kube-apiserver, with an
audit log of every request trainyard's ServiceAccount makes); trainyard's controllers run as a
platform runs them, `trainyard serve controller` in a process of their own with that
ServiceAccount's token, while this process creates the TrainJobs and watches. The load is open:
TrainJobs are created at ``--rate`` whatever the controllers do (with the controllers in this
process, as before, the creator slowed down whenever they were busy, and the figures hid the
queue that built up). ``stages_p50_ms`` splits a launch: TrainJob created -> its Workload
created -> admitted -> JobSet created, each seen through a watch. A JobSet's
commit is seen through a watch on JobSets (kube-apiserver notifies its watchers a few
milliseconds after etcd commits: that delay is in these figures, where the embedded run reads
its store directly). Writes are counted from the audit log: the requests of trainyard's
ServiceAccount, by verb and resource.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox.real.audit_log import audit_events
from trainyard.benchmarks.launch_measures import (
    NAMESPACE,
    RUNTIMES,
    per_job_writes,
    percentile,
    queue_objects,
    trainjob,
)

SERVICE_USER = "system:serviceaccount:trainyard-system:trainyard-webhook"
_WRITE_VERBS = {"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE"}


def audit_write_counts(audit_log: Path, user: str = SERVICE_USER) -> Counter[str]:
    """``user``'s writes in a kube-apiserver audit log, counted as ``write_counts`` counts the embedded server's."""
    counts: Counter[str] = Counter()
    for event in audit_events(audit_log):
        if event.get("stage") != "ResponseComplete" or event.get("user", {}).get("username") != user:
            continue
        method = _WRITE_VERBS.get(event.get("verb", ""))
        if method is None:
            continue
        reference = event.get("objectRef") or {}
        resource, subresource = reference.get("resource", ""), reference.get("subresource")
        if resource == "leases":
            counts["lease"] += 1
        elif resource == "events":
            counts["event"] += 1
        elif subresource == "status":
            counts["status"] += 1
            counts[f"status:{method} {resource}"] += 1
        else:
            counts["object"] += 1
            counts[f"object:{method} {resource}"] += 1
    return counts


async def measure_real(
    jobs: int, rate: float, runtime: str = "torch_distributed", binaries: Path | None = None
) -> dict[str, Any]:
    from sandbox.real.binaries import ClusterTools
    from sandbox.real.control_plane import RealCluster, RealClusterSettings
    from sandbox.real.install import service_account_kubeconfig, service_documents

    settings = RealClusterSettings(controller_manager=False, scheduler=False, kwok=False, jobset=False, audit=True)
    cluster = RealCluster(ClusterTools.locate(binaries), settings)
    await asyncio.to_thread(cluster.start)
    try:
        for document in [*service_documents(), *queue_objects(NAMESPACE, cpu=4 * jobs + 1, runtime=runtime)]:
            await asyncio.to_thread(cluster.admin.apply, document)
        kubeconfig = await asyncio.to_thread(
            service_account_kubeconfig,
            cluster.admin,
            cluster.workdir / "trainyard.kubeconfig",
            cluster.url,
            cluster.admin_ca_pem,
        )
        return await _run_jobs(cluster, kubeconfig, jobs, rate, runtime)
    finally:
        await asyncio.to_thread(cluster.stop)


async def _run_jobs(cluster: Any, kubeconfig: Path, jobs: int, rate: float, runtime: str) -> dict[str, Any]:
    from sandbox.real.service_process import ServiceProcess
    from scheduler.kube import KubeClient, load_api_client

    admin_api = await load_api_client(cluster.kubeconfig("admin"))
    admin = KubeClient(admin_api)
    launched_at: dict[str, float] = {}
    all_launched = asyncio.Event()

    def launched(obj: dict[str, Any]) -> None:
        _launched(obj, launched_at)
        if len(launched_at) >= jobs:
            all_launched.set()

    watcher = asyncio.create_task(_follow(admin, "JobSet", launched))
    stages = WorkloadStages()
    stage_watcher = asyncio.create_task(_follow(admin, "Workload", stages.observe))
    created_at: dict[str, float] = {}
    # the controllers as a platform runs them: `trainyard serve controller`, a process of its own
    service = ServiceProcess(
        cluster, kubeconfig, identity="trainyard-bench", controllers_only=True, extra_args=["--no-leader-elect"]
    )
    await asyncio.to_thread(service.start)
    try:
        await asyncio.sleep(1.0)  # informers listed: the audit from here on is the jobs' own
        before = audit_write_counts(cluster.audit_log)
        started = time.perf_counter()
        for index in range(jobs):
            delay = started + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            name = f"job-{index:05d}"
            created_at[name] = time.perf_counter()
            await admin.create(trainjob(name, NAMESPACE, runtime=RUNTIMES[runtime]))
        await asyncio.wait_for(all_launched.wait(), timeout=max(60.0, jobs / rate * 5))
        wall = time.perf_counter() - started
        await _wait_resumed(admin, jobs)
        await asyncio.sleep(1.0)  # the audit log is written as requests complete
        writes = audit_write_counts(cluster.audit_log) - before
    finally:
        await asyncio.to_thread(service.stop)
        for task in (watcher, stage_watcher):
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await admin_api.close()
    latencies = [(launched_at[name] - created_at[name]) * 1000.0 for name in created_at]
    return {
        "jobs": jobs,
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2),
        "stages_p50_ms": stages.medians(created_at, launched_at),
        **per_job_writes(writes, jobs),
        "wall_seconds": round(wall, 2),
    }


async def _follow(client: Any, kind: str, observe: Callable[[dict[str, Any]], None]) -> None:
    """Every object of ``kind`` in the bench's namespace to ``observe``: list, then watch from the
    list's revision, again after any refusal (kube-apiserver answers 429 while a just-installed
    CRD's storage initialises). Runs until cancelled."""
    from scheduler.kube import KubeApiError

    while True:
        try:
            listed = await client.list(kind, NAMESPACE)
            for obj in listed.items:
                observe(obj)
            async for event in client.watch(
                kind, NAMESPACE, resource_version=listed.resource_version, timeout_seconds=3600
            ):
                observe(event.object)
        except (KubeApiError, OSError, TimeoutError):
            await asyncio.sleep(0.2)


def _launched(obj: dict[str, Any], launched_at: dict[str, float]) -> None:
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if reference.get("controller") and reference.get("name") not in launched_at:
            launched_at[str(reference["name"])] = time.perf_counter()


async def _wait_resumed(client: Any, jobs: int) -> None:
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        listed = await client.list("TrainJob", NAMESPACE)
        if sum(1 for job in listed.items if (job.get("spec") or {}).get("suspend") is False) >= jobs:
            return
        await asyncio.sleep(0.2)


class WorkloadStages:
    """Where a job's launch time goes: when its Workload was first seen, and when its admission.

    Seen through a watch of this process, as the JobSets are, so each stage carries the same
    few milliseconds of notification delay.
    """

    def __init__(self) -> None:
        self.created: dict[str, float] = {}  # TrainJob name -> its Workload first seen
        self.admitted: dict[str, float] = {}  # TrainJob name -> its Workload's admission first seen

    def observe(self, obj: dict[str, Any]) -> None:
        now = time.perf_counter()
        for reference in (obj.get("metadata") or {}).get("ownerReferences") or ():
            if reference.get("controller"):
                owner = str(reference.get("name"))
                self.created.setdefault(owner, now)
                if (obj.get("status") or {}).get("admission"):
                    self.admitted.setdefault(owner, now)

    def medians(self, created_at: dict[str, float], launched_at: dict[str, float]) -> dict[str, float]:
        """Median ms of each stage: TrainJob created -> Workload created -> admitted -> JobSet created."""
        names = [n for n in created_at if n in self.created and n in self.admitted and n in launched_at]
        if not names:
            return {}

        def median(start: dict[str, float], end: dict[str, float]) -> float:
            return round(statistics.median((end[n] - start[n]) * 1000.0 for n in names), 2)

        return {
            "workload_created": median(created_at, self.created),
            "admitted": median(self.created, self.admitted),
            "jobset_created": median(self.admitted, launched_at),
        }
