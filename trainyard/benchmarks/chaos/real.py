"""`trainyard bench chaos --real`: the chaos benchmark on a real kube-apiserver and etcd.

The same jobs, queues, kills and audit as the embedded run (``chaos``), with the real parts in
their places: kube-apiserver and etcd as processes (``sandbox.real``), the faults from a proxy
in front of kube-apiserver (``sandbox.real.fault_proxy``: 409, 410 after a "compaction", 429,
5xx, cut watches, answers lost after commit) that the controllers and the submitter talk
through, and the audit fed from etcd's own history of Workloads and JobSets
(``sandbox.real.etcd_history``), so no fault can hide a write from it. The controllers run in
this process with trainyard's ServiceAccount token and are killed and started afresh every few
seconds of leading; a JobSet stand-in completes each JobSet after a short run, writing to the
API server directly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import time
from pathlib import Path
from typing import Any

from trainyard.benchmarks.chaos.audit import Audit
from trainyard.benchmarks.chaos.diagnostics import NAMESPACE
from trainyard.benchmarks.chaos.harness import (
    QUEUES,
    Killer,
    chaos_objects,
    fault_kinds,
    report_progress,
    settle,
    submit,
)

WATCHED = {("kueue.x-k8s.io", "workloads"): "Workload", ("jobset.x-k8s.io", "jobsets"): "JobSet"}


class RealReplicas:
    """Controller replicas against the proxy, started and killed as ``Killer`` asks."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig

    async def start(self) -> Any:
        from sandbox.embedded import RunningControllers
        from sandbox.real.service import REAL_INFORMERS
        from scheduler.controllers.service import build_controller_service
        from scheduler.kube import KubeClient, load_api_client

        api_client = await load_api_client(self.kubeconfig)
        service = build_controller_service(
            KubeClient(api_client),
            launcher_mode="jobset",
            leader_elect=False,
            informer_settings=REAL_INFORMERS,
        )
        return RunningControllers(service, asyncio.create_task(service.manager.run(), name="chaos-real"), api_client)

    async def restart(self, replica: Any) -> Any:
        await replica.stop()
        return await self.start()


async def _finish_jobsets(admin: Any, rng: random.Random) -> None:
    """Each new JobSet reports Completed after 0.1–0.6 s, as a JobSet controller would report its run."""
    from scheduler.kube import KubeApiError, patch_status

    async def complete(name: str, uid: str) -> None:
        await asyncio.sleep(rng.uniform(0.1, 0.6))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        condition = {
            "type": "Completed",
            "status": "True",
            "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",  # metav1.Condition requires it: the CRD refuses one without
            "lastTransitionTime": stamp,
        }
        try:
            current = await admin.get("JobSet", name, NAMESPACE)
            if current["metadata"].get("uid") == uid:
                await patch_status(
                    admin, "JobSet", name, NAMESPACE, {"conditions": [condition], "terminalState": "Completed"}
                )
        except KubeApiError as error:
            if error.status != 404:  # 404: deleted meanwhile, the job was evicted
                print(f"chaos: JobSet {name} not completed: {error}", file=sys.stderr)

    seen: set[str] = set()
    tasks: set[asyncio.Task[None]] = set()

    def started(obj: dict[str, Any]) -> None:
        uid = obj["metadata"]["uid"]
        if uid not in seen:
            seen.add(uid)
            task = asyncio.create_task(complete(obj["metadata"]["name"], uid))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    try:
        while True:  # list, then watch from the list's revision; again after any refusal
            with contextlib.suppress(KubeApiError, OSError, TimeoutError):
                listed = await admin.list("JobSet", NAMESPACE)
                for obj in listed.items:
                    started(obj)
                async for event in admin.watch(
                    "JobSet", NAMESPACE, resource_version=listed.resource_version, timeout_seconds=300
                ):
                    if event.type == "ADDED":
                        started(event.object)
            await asyncio.sleep(0.2)
    finally:
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def measure_real(args: argparse.Namespace) -> dict[str, Any]:
    from sandbox.real.binaries import ClusterTools
    from sandbox.real.control_plane import RealCluster, RealClusterSettings
    from sandbox.real.etcd_history import current_revision, follow
    from sandbox.real.fault_proxy import FaultProxy
    from sandbox.real.install import service_account_kubeconfig, service_documents
    from sandbox.real.pki import write_kubeconfig
    from scheduler.kube import KubeClient, load_api_client

    settings = RealClusterSettings(controller_manager=False, scheduler=False, kwok=False, jobset=False)
    cluster = RealCluster(ClusterTools.locate(getattr(args, "binaries", None)), settings)
    await asyncio.to_thread(cluster.start)
    proxy = FaultProxy(cluster.url, cluster.admin_ca_pem)
    try:
        for document in [*service_documents(), *chaos_objects(args.cpu_per_queue)]:
            await asyncio.to_thread(cluster.admin.apply, document)
        direct = await asyncio.to_thread(
            service_account_kubeconfig,
            cluster.admin,
            cluster.workdir / "trainyard-direct.kubeconfig",
            cluster.url,
            cluster.admin_ca_pem,
        )
        await proxy.start()
        token = str(_token_of(direct))
        faulty = write_kubeconfig(cluster.workdir / "trainyard.kubeconfig", proxy.url, None, token, name="proxy")
        admin_token = cluster.credentials.identities["admin"].token
        submitter_config = write_kubeconfig(
            cluster.workdir / "submitter.kubeconfig", proxy.url, None, admin_token, name="submitter"
        )
        audit = Audit(limit_milli=2 * args.cpu_per_queue * 1000, cohort_milli=2 * args.cpu_per_queue * 1000)
        start = await current_revision(cluster.etcd_url)
        auditing = asyncio.create_task(follow(cluster.etcd_url, WATCHED, audit.record, start))
        admin_api = await load_api_client(cluster.kubeconfig("admin"))
        submitter_api = await load_api_client(submitter_config)
        try:
            return await _run(
                args, audit, proxy, RealReplicas(faulty), KubeClient(admin_api), KubeClient(submitter_api)
            )
        finally:
            auditing.cancel()
            await asyncio.gather(auditing, return_exceptions=True)
            await admin_api.close()
            await submitter_api.close()
    finally:
        await proxy.stop()
        await asyncio.to_thread(cluster.stop)


def _token_of(kubeconfig: Path) -> str:
    import yaml

    config = yaml.safe_load(kubeconfig.read_text())
    return str(config["users"][0]["user"]["token"])


async def _run(
    args: argparse.Namespace, audit: Audit, proxy: Any, replicas: RealReplicas, admin: Any, submitter: Any
) -> dict[str, Any]:
    rng = random.Random(args.seed)
    started = time.perf_counter()
    finishing = asyncio.create_task(_finish_jobsets(admin, random.Random(args.seed + 1)))
    killer = Killer(replicas, await replicas.start(), args.restart_every, rng)
    names: list[str] = []
    progress = (
        asyncio.create_task(report_progress(audit, names, killer, args.progress, started))
        if args.progress > 0
        else None
    )
    try:
        killing = asyncio.create_task(killer.run())
        proxy.random(
            args.fault_rate, seed=args.seed, kinds=fault_kinds(args), compaction_interval=args.compaction_every
        )
        try:
            await submit(submitter, args, rng, started, names)
            await asyncio.sleep(min(args.restart_every * 2, 10.0))  # chaos goes on a while after the last arrival
        finally:
            killer.stopped.set()
            await killing
        proxy.calm()
        await settle(audit, names, args.settle_timeout)
    finally:
        for task in (finishing, progress):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await killer.replica.stop()
    lost = [
        f"{n}: " + audit.last_state.get(audit.workload_of.get(n, ""), "no Workload was ever created")
        for n in names
        if audit.workload_of.get(n) not in audit.finished
    ]
    return {
        "jobs": args.jobs,
        "lost": len(lost),
        "double_admitted": len(audit.double_admitted),
        "quota_violations": audit.quota_violations,
        "controller_restarts": killer.restarts,
        "faults_injected": sum(proxy.injected.values()),
        "faults_by_kind": dict(proxy.injected),
        "admissions": audit.admissions,
        "queues": list(QUEUES),
        "wall_seconds": round(time.perf_counter() - started, 2),
        "examples": sorted(audit.double_admitted)[:5] + audit.violation_examples + lost[:20],
    }
