"""`trainyard simulate --backend kwok`: the same scenario on a real KWOK cluster, same metrics.

``run_on_kwok`` applies the exported objects (namespaces, fake nodes, stages, Kueue objects)
with kubernetes-asyncio, creates each job at its submit time (wall clock), watches Kueue
Workloads and turns their conditions into the simulator's metrics with ``WorkloadEventCollector``.
The collector is plain code over watch-event dicts, so it is tested offline on recorded events.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulations.kwok_export import simulated_runtime, trainjob_document
from simulations.metrics import MetricsRecorder
from simulations.scenarios import BuiltScenario
from simulations.workloads import JobSpec

KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"


def _timestamp(text: str | None) -> float | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


@dataclass
class WorkloadEventCollector:
    """Metrics from a stream of Workload watch events (``{"type": ..., "object": {...}}``).

    A job's key is its Workload's owner TrainJob (``namespace/name``). Times are seconds after
    ``origin`` (the wall-clock start of the run), multiplied by ``time_scale`` (the speedup the
    jobs were submitted with) so that metrics read in the scenario's own time.
    """

    metrics: MetricsRecorder
    jobs: dict[str, JobSpec]  # "namespace/name" of the Job -> its spec
    origin: float
    time_scale: float = 1.0
    admitted: set[str] = field(default_factory=set)
    finished: set[str] = field(default_factory=set)
    evictions_seen: dict[str, str] = field(default_factory=dict)  # key -> last Evicted transition time

    def since_origin(self, stamp: float) -> float:
        return (stamp - self.origin) * self.time_scale

    def _key(self, workload: dict[str, Any]) -> str | None:
        metadata = workload.get("metadata") or {}
        for owner in metadata.get("ownerReferences") or []:
            key = f"{metadata.get('namespace')}/{owner.get('name')}"
            if key in self.jobs:
                return key
        return None

    def submitted(self, key: str, cluster_queue: str, at: float) -> None:
        job = self.jobs[key]
        self.metrics.submitted(key, cluster_queue, job.gpus, at)

    def handle(self, event: dict[str, Any]) -> None:
        workload = event.get("object") or {}
        key = self._key(workload)
        if key is None or key not in self.metrics.jobs:
            return
        job = self.jobs[key]
        reserved = _condition(workload, "QuotaReserved")
        evicted = _condition(workload, "Evicted")
        finished = _condition(workload, "Finished")
        if evicted and evicted.get("status") == "True":
            stamp = str(evicted.get("lastTransitionTime"))
            if self.evictions_seen.get(key) != stamp and key in self.admitted:
                self.evictions_seen[key] = stamp
                at = self.since_origin(_timestamp(stamp) or time.time())
                self.admitted.discard(key)
                self.metrics.released(key, job.gpus, at, requeued=True)
                reason = str(evicted.get("reason") or "Evicted")
                if reason == "Preempted":
                    preempted = _condition(workload, "Preempted")
                    self.metrics.preempted(key, str((preempted or {}).get("reason") or reason))
                else:
                    self.metrics.evicted(key, reason)
        if reserved and reserved.get("status") == "True" and key not in self.admitted and key not in self.finished:
            at = self.since_origin(_timestamp(reserved.get("lastTransitionTime")) or time.time())
            self.admitted.add(key)
            self.metrics.admitted(key, job.gpus, at)
        if finished and finished.get("status") == "True" and key not in self.finished:
            at = self.since_origin(_timestamp(finished.get("lastTransitionTime")) or time.time())
            if key in self.admitted:
                self.admitted.discard(key)
                self.metrics.released(key, job.gpus, at, requeued=False)
            self.finished.add(key)

    def handle_all(self, events: Iterable[dict[str, Any]]) -> None:
        for event in events:
            self.handle(event)


def _plural(kind: str) -> str:
    """The resource name of a kind in its REST path (``Topology`` → ``topologies``)."""
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + ("es" if lower.endswith("s") else "s")


async def _apply(api_client: Any, document: dict[str, Any]) -> None:
    """Create an object (or leave it if it exists) through the dynamic REST path."""
    from kubernetes_asyncio.client.exceptions import ApiException

    api_version = document["apiVersion"]
    kind = document["kind"]
    metadata = document["metadata"]
    plural = _plural(kind)
    namespace = metadata.get("namespace")
    prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    path = f"{prefix}/namespaces/{namespace}/{plural}" if namespace else f"{prefix}/{plural}"
    try:
        await api_client.call_api(path, "POST", body=document, response_type="object", _return_http_data_only=True)
    except ApiException as error:
        if error.status != 409:
            raise


async def _run(built: BuiltScenario, kubeconfig: Path, seed: int, timeout: float, speedup: float) -> dict[str, Any]:
    from kubernetes_asyncio import client, config, watch

    from simulations.kwok_export import exported_jobs
    from simulations.yamlsource import load_documents

    await config.load_kube_config(config_file=str(kubeconfig))
    jobs = list(exported_jobs(built, seed, speedup))
    by_key = {f"{j.team}/{j.name}": j for j in jobs}
    metrics = MetricsRecorder(built.capacity, built.nominal)
    origin = time.time()
    collector = WorkloadEventCollector(metrics, by_key, origin, time_scale=speedup)
    queue_of = {}
    for obj in built.objects:
        if obj.kind == "LocalQueue":
            queue_of[obj.namespace] = obj.to_dict()["spec"]["clusterQueue"]
    async with client.ApiClient() as api_client:
        namespaces = sorted({j.team for j in jobs})
        for name in namespaces:
            await _apply(api_client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        for path in built.scenario.stages:
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
            for file in files:
                for document in load_documents(file):
                    await _apply(api_client, document.data)
        for node in built.node_documents:
            await _apply(api_client, node)
        await _apply(api_client, simulated_runtime())
        for obj in built.objects:
            await _apply(api_client, obj.to_dict())

        async def submit() -> None:
            for job in jobs:
                delay = origin + job.submit_time - time.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                key = f"{job.team}/{job.name}"
                collector.submitted(key, queue_of.get(job.team, job.team), collector.since_origin(time.time()))
                await _apply(api_client, trainjob_document(job))

        async def observe() -> None:
            custom = client.CustomObjectsApi(api_client)
            stream = watch.Watch()
            async with stream:
                async for event in stream.stream(
                    custom.list_cluster_custom_object,
                    KUEUE_GROUP,
                    KUEUE_VERSION,
                    "workloads",
                    timeout_seconds=int(timeout),
                ):
                    collector.handle(event)
                    if len(collector.finished) == len(jobs):
                        return

        submitter = asyncio.create_task(submit())
        try:
            await asyncio.wait_for(observe(), timeout)
        except TimeoutError:
            pass
        finally:
            submitter.cancel()
            await asyncio.gather(submitter, return_exceptions=True)
    metrics.end_time = collector.since_origin(time.time())
    summary = metrics.summary()
    summary["backend"] = "kwok"
    summary["scenario"] = built.scenario.name
    return summary


def run_on_kwok(
    built: BuiltScenario, kubeconfig: Path, seed: int = 1, timeout: float = 3600.0, speedup: float = 1.0
) -> dict[str, Any]:
    """Run ``built`` on the cluster of ``kubeconfig``; ``speedup`` N submits N times faster."""
    return asyncio.run(_run(built, kubeconfig, seed, timeout, speedup))
