"""`trainyard bench admission --real`: Kueue's performance scenario through real Kueue v0.17, then
through trainyard's queue controller, on one real cluster (``sandbox.real``), one after the other.

Each side gets a fresh set of namespaces, ClusterQueues and Cohorts (``prefixed_documents``: ``kq-``
for Kueue, ``ty-`` for trainyard) with the scenario's ResourceFlavor and WorkloadPriorityClasses,
and the same Workloads on the same schedule (created ``submit_time`` after the side's start, in
Kueue's runner's order). A runner in this process plays Kueue's performance runner for both: it
watches the Workloads, marks each ``Finished`` its running time after its admission, and gives
back an evicted Workload's reservation. Kueue runs first; then its process is stopped and its
webhooks removed, and ``trainyard serve`` starts as a process of its own with its ServiceAccount's
token: never both admitting at once, neither seeing the other's queues, and each controller's CPU
is its own process's alone (/proc/PID/stat), the runner's apart. Kueue's Workloads and Events are
deleted before trainyard starts, so both sides start on a cluster holding the same. Writes per workload are the
controller's own from the audit log (Kueue's identity or trainyard's ServiceAccount); the
runner's writes (creates, Finished, eviction releases for Kueue) are counted for neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from trainyard.benchmarks.admission_measures import SideTimes, process_cpu_seconds, side_figures
from trainyard.benchmarks.controller_real import SERVICE_USER, audit_write_counts
from trainyard.benchmarks.parity_sides import release_reservation

KUEUE_USER = "kueue-controller"  # sandbox.real's identity for Kueue's manager
CREATE_CONCURRENCY = 32  # Kueue's runner creates every ClusterQueue's Workloads at once, in parallel


def _condition_true(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


class PerfRunner:
    """Kueue's performance runner for one side: records admissions and finishes Workloads on time."""

    def __init__(self, client: Any, prefix: str, running_seconds: dict[str, float], times: SideTimes) -> None:
        self.client = client
        self.prefix = prefix
        self.running_seconds = running_seconds  # key -> its running time
        self.times = times
        self.latest: dict[str, dict[str, Any]] = {}
        self.admission_serial: dict[str, int] = {}
        self.finished: set[str] = set()
        self.all_finished = asyncio.Event()
        self._serial = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def watch(self) -> None:
        from scheduler.kube import KubeApiError

        while True:
            try:
                listed = await self.client.list("Workload")
                for obj in listed.items:
                    self.observe(obj)
                async for event in self.client.watch(
                    "Workload", resource_version=listed.resource_version, timeout_seconds=600
                ):
                    if event.type in ("ADDED", "MODIFIED"):
                        self.observe(event.object)
            except (KubeApiError, OSError, TimeoutError):
                await asyncio.sleep(0.2)

    def observe(self, obj: dict[str, Any]) -> None:
        metadata = obj["metadata"]
        if not str(metadata["namespace"]).startswith(self.prefix):
            return
        key = f"{metadata['namespace']}/{metadata['name']}"
        if key not in self.running_seconds:
            return
        self.latest[key] = obj
        if _condition_true(obj, "Finished"):
            self.finished.add(key)
            if len(self.finished) == len(self.running_seconds):
                self.all_finished.set()
            return
        admitted = _condition_true(obj, "Admitted")
        if admitted and key not in self.admission_serial:
            self.times.admitted[key] = time.perf_counter()
            self._serial += 1
            self.admission_serial[key] = self._serial
            self._spawn(self._finish_later(key, self._serial))
        elif not admitted and key in self.admission_serial:
            del self.admission_serial[key]
            self.times.evictions += 1
        if _condition_true(obj, "Evicted") and (obj.get("status") or {}).get("admission"):
            self._spawn(release_reservation(self.client, obj, "Evicted by the test runner"))

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finish_later(self, key: str, serial: int) -> None:
        """Finished once its running time has passed since this admission, unless evicted meanwhile
        (an update with the resourceVersion, as Kueue's runner writes it; on a conflict, again)."""
        from scheduler.kube import KubeApiError, patch_status

        await asyncio.sleep(self.running_seconds[key])
        for _ in range(50):
            if self.admission_serial.get(key) != serial:
                return
            obj = self.latest[key]
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            finished = {"type": "Finished", "status": "True", "reason": "ByTest", "message": "By test runner"}
            conditions = [
                *((obj.get("status") or {}).get("conditions") or ()),
                {**finished, "lastTransitionTime": stamp},
            ]
            metadata = obj["metadata"]
            try:
                await patch_status(
                    self.client,
                    "Workload",
                    metadata["name"],
                    metadata["namespace"],
                    {"conditions": conditions},
                    resource_version=str(metadata["resourceVersion"]),
                    attempts=1,
                )
                return
            except KubeApiError:
                await asyncio.sleep(0.05)  # the watch brings the newer copy


async def create_on_schedule(client: Any, documents: list[tuple[float, dict[str, Any]]], times: SideTimes) -> None:
    """Each Workload ``offset`` seconds after the start; its creation time is when the server answered."""
    gate = asyncio.Semaphore(CREATE_CONCURRENCY)
    started = time.perf_counter()

    async def create(offset: float, document: dict[str, Any]) -> None:
        delay = started + offset - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        async with gate:
            await client.create(document)
        metadata = document["metadata"]
        times.created[f"{metadata['namespace']}/{metadata['name']}"] = time.perf_counter()

    await asyncio.gather(*(create(offset, document) for offset, document in documents))


async def run_side(
    cluster: Any,
    client: Any,
    prefix: str,
    workloads: list[tuple[float, str, float, dict[str, Any]]],
    pid: int,
    user: str,
    timeout: float,
) -> dict[str, Any]:
    """One side's run: the Workloads (offset, class, running seconds, document) created on schedule
    until every one finished; the controller's CPU and writes over that window."""
    times = SideTimes()
    documents = []
    for offset, workload_class, _, original in workloads:
        document = {**original, "metadata": {**original["metadata"]}}
        document["metadata"]["namespace"] = prefix + document["metadata"]["namespace"]
        times.class_of[f"{document['metadata']['namespace']}/{document['metadata']['name']}"] = workload_class
        documents.append((offset, document))
    running = {key: seconds for key, (_, _, seconds, _) in zip(times.class_of, workloads, strict=True)}
    runner = PerfRunner(client, prefix, running, times)
    watching = asyncio.create_task(runner.watch())
    try:
        await asyncio.sleep(0.5)  # the runner's watch is open before the first Workload
        writes_before = await asyncio.to_thread(audit_write_counts, cluster.audit_log, user)
        cpu_before = process_cpu_seconds(pid)
        started = time.perf_counter()
        await create_on_schedule(client, documents, times)
        with contextlib.suppress(TimeoutError):  # reported as fewer finished than workloads
            await asyncio.wait_for(runner.all_finished.wait(), timeout)
        cpu = process_cpu_seconds(pid) - cpu_before
        wall = (max(times.admitted.values()) if times.admitted else time.perf_counter()) - started
        await asyncio.sleep(1.0)  # the audit log is written as requests complete
        writes: Counter[str] = await asyncio.to_thread(audit_write_counts, cluster.audit_log, user)
        figures = side_figures(times, wall, cpu, writes - writes_before)
        figures["finished"] = len(runner.finished)
        return figures
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)


def stop_kueue(cluster: Any) -> None:
    """Kueue's manager stopped and its webhooks unregistered (else every Workload write would be refused)."""
    import yaml

    from sandbox.real.loopback import webhook_to_url

    cluster.processes.pop("kueue").stop()
    for path in cluster.tools.webhooks("kueue"):
        for document in yaml.safe_load_all(Path(path).read_text()):
            if isinstance(document, dict) and str(document.get("kind", "")).endswith("WebhookConfiguration"):
                registered = webhook_to_url(document, "kueue", 0, b"")  # under the name it was registered
                cluster.admin.delete(document["apiVersion"], document["kind"], registered["metadata"]["name"])


async def clear_side(client: Any, prefix: str, rounds: int = 20) -> int:
    """Every Workload and Event of one side's namespaces deleted (finalizers Kueue left, once
    stopped, cleared first): the next side meets a cluster that holds what the first one met,
    not fifteen thousand finished Workloads to list, cache and watch. How many were deleted."""
    from scheduler.kube import KubeApiError

    gates = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def remove(kind: str, obj: dict[str, Any]) -> None:
        metadata = obj["metadata"]
        async with gates:
            if metadata.get("finalizers"):
                with contextlib.suppress(KubeApiError):  # a conflict: the next round sees it again
                    await client.patch(
                        kind, metadata["name"], {"metadata": {"finalizers": None}}, metadata["namespace"]
                    )
            if not metadata.get("deletionTimestamp"):
                with contextlib.suppress(KubeApiError):
                    await client.delete(kind, metadata["name"], metadata["namespace"])

    removed: set[tuple[str, str, str]] = set()
    for kind in ("Workload", "Event"):
        for _ in range(rounds):
            listed = (await client.list(kind)).items
            mine = [o for o in listed if str(o["metadata"]["namespace"]).startswith(prefix)]
            if not mine:
                break
            removed.update((kind, o["metadata"]["namespace"], o["metadata"]["name"]) for o in mine)
            await asyncio.gather(*(remove(kind, obj) for obj in mine))
        else:
            raise SystemExit(f"bench admission --real: the {kind} objects of {prefix}* would not go")
    return len(removed)


def start_trainyard(cluster: Any) -> Any:
    """``trainyard serve`` as its own process, with a token of its ServiceAccount (the install's RBAC)."""
    from sandbox.real.install import service_account_kubeconfig, service_documents
    from sandbox.real.service_process import ServiceProcess

    for document in service_documents():
        cluster.admin.apply(document)
    kubeconfig = service_account_kubeconfig(
        cluster.admin, cluster.workdir / "trainyard.kubeconfig", cluster.url, cluster.admin_ca_pem
    )
    return ServiceProcess(cluster, kubeconfig, identity="trainyard-bench").start()


def scenario_workloads(scenario: str, count: int | None) -> tuple[list[dict[str, Any]], list[Any]]:
    """The scenario's queue objects and its Workloads (offset, class, running seconds, document):
    the first ``count`` by creation time, so a short run still spans every ClusterQueue."""
    from simulations.engine_driver import workload_document
    from simulations.events import RandomStreams
    from simulations.scenarios import build, resolve_scenario
    from trainyard.benchmarks.parity import with_priority

    built = build(resolve_scenario(scenario))
    objects = [obj.to_dict() for obj in built.objects]
    priorities = {
        o["metadata"]["name"]: int(o.get("value") or 0) for o in objects if o["kind"] == "WorkloadPriorityClass"
    }
    jobs = sorted(built.jobs(RandomStreams(0)), key=lambda job: job.submit_time)[:count]
    workloads = [
        (job.submit_time, str(job.priority_class), job.duration, with_priority(workload_document(job), priorities))
        for job in jobs
    ]
    return objects, workloads


async def measure(scenario: str, count: int | None, binaries: Path | None, timeout: float) -> dict[str, Any]:
    from sandbox.real.binaries import ClusterTools
    from sandbox.real.control_plane import RealCluster, RealClusterSettings
    from scheduler.kube import KubeClient, load_api_client
    from trainyard.benchmarks.admission_measures import prefixed_documents
    from trainyard.benchmarks.parity import until_active

    objects, workloads = scenario_workloads(scenario, count)
    settings = RealClusterSettings(
        kueue=True, kwok=False, scheduler=False, jobset=False, controller_manager=False, audit=True
    )
    cluster = RealCluster(ClusterTools.locate(binaries), settings)
    await asyncio.to_thread(cluster.start)
    try:
        api = await load_api_client(cluster.kubeconfig("admin"))
        client = KubeClient(api)
        try:
            kueue_objects = await asyncio.to_thread(_seed, cluster, prefixed_documents(objects, "kq-"))
            await until_active(client, [o for o in kueue_objects if o["kind"] == "ClusterQueue"])
            kueue_pid = cluster.processes["kueue"].pid
            kueue = await run_side(cluster, client, "kq-", workloads, kueue_pid, KUEUE_USER, timeout)
            print(f"bench admission --real: Kueue's side {json.dumps(kueue)}", file=sys.stderr, flush=True)
            await asyncio.to_thread(stop_kueue, cluster)
            await clear_side(client, "kq-")
            await asyncio.to_thread(_seed, cluster, prefixed_documents(objects, "ty-"))
            service = await asyncio.to_thread(start_trainyard, cluster)
            try:
                await asyncio.sleep(3.0)  # leading, its informers listed and the queues in its engine
                trainyard = await run_side(
                    cluster, client, "ty-", workloads, service.process.pid, SERVICE_USER, timeout
                )
            finally:
                await asyncio.to_thread(service.stop)
        finally:
            await api.close()
    finally:
        await asyncio.to_thread(cluster.stop)
    return {"scenario": scenario, "workloads": len(workloads), "trainyard": trainyard, "kueue": kueue}


def _seed(cluster: Any, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    namespaces = sorted({str(d["metadata"]["namespace"]) for d in documents if d["metadata"].get("namespace")})
    for name in namespaces:
        cluster.admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    for document in documents:
        cluster.admin.apply(document)
    return documents
