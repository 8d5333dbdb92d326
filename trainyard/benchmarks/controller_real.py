"""`trainyard bench controller --real`: the same launch figures on a real kube-apiserver and etcd.

The real cluster runs only what the measured path touches (etcd and kube-apiserver, with an
audit log of every request trainyard's ServiceAccount makes); trainyard's controllers run in this
process, with that ServiceAccount's token, exactly as the embedded run has them. A JobSet's
commit is seen through a watch on JobSets (kube-apiserver notifies its watchers a few
milliseconds after etcd commits: that delay is in these figures, where the embedded run reads
its store directly). Writes are counted from the audit log: the requests of trainyard's
ServiceAccount, by verb and resource.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

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
    if not audit_log.exists():
        return counts
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
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
    from sandbox.real.service import REAL_INFORMERS
    from scheduler.controllers.service import build_controller_service

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
        return await _run_jobs(cluster, kubeconfig, jobs, rate, runtime, build_controller_service, REAL_INFORMERS)
    finally:
        await asyncio.to_thread(cluster.stop)


async def _run_jobs(
    cluster: Any, kubeconfig: Path, jobs: int, rate: float, runtime: str, build: Any, informers: Any
) -> dict[str, Any]:
    from scheduler.kube import KubeClient, load_api_client

    service_api = await load_api_client(kubeconfig)
    admin_api = await load_api_client(cluster.kubeconfig("admin"))
    admin = KubeClient(admin_api)
    service = build(KubeClient(service_api), launcher_mode="jobset", leader_elect=False, informer_settings=informers)
    controllers = asyncio.create_task(service.manager.run(), name="bench-real")
    launched_at: dict[str, float] = {}
    all_launched = asyncio.Event()
    watcher = asyncio.create_task(_watch_jobsets(admin, launched_at, jobs, all_launched))
    created_at: dict[str, float] = {}
    try:
        await service.manager.leading.wait()
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
        for task in (controllers, watcher):
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await service_api.close()
        await admin_api.close()
    latencies = [(launched_at[name] - created_at[name]) * 1000.0 for name in created_at]
    return {
        "jobs": jobs,
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2),
        **per_job_writes(writes, jobs),
        "wall_seconds": round(wall, 2),
    }


async def _watch_jobsets(client: Any, launched_at: dict[str, float], jobs: int, done: asyncio.Event) -> None:
    """When each TrainJob's JobSet appears: list, then watch from the list's revision, again after
    any refusal (kube-apiserver answers 429 while a just-installed CRD's storage initialises)."""
    from scheduler.kube import KubeApiError

    while not done.is_set():
        try:
            listed = await client.list("JobSet", NAMESPACE)
            for obj in listed.items:
                _launched(obj, launched_at)
            async for event in client.watch(
                "JobSet", NAMESPACE, resource_version=listed.resource_version, timeout_seconds=3600
            ):
                _launched(event.object, launched_at)
                if len(launched_at) >= jobs:
                    done.set()
        except (KubeApiError, OSError, TimeoutError):
            await asyncio.sleep(0.2)
        if len(launched_at) >= jobs:
            done.set()


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
