"""`trainyard simulate --backend kwok`: the same scenario on a real KWOK cluster, same metrics.

``run_on_kwok`` creates the exported objects (namespaces, stages, fake nodes, the simulated
training runtime, Kueue objects) through the Kubernetes adapter (``scheduler.kube``), creates
each TrainJob at its submit time (wall clock, divided by ``speedup``), mirrors Kueue's Workloads
with an informer (list, watch, re-list on 410) and turns their conditions into the simulator's
metrics with ``WorkloadEventCollector``, a plain function of Workload documents.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.kube import (
    Informer,
    KubeClient,
    close_api_client,
    create_unless_exists,
    load_api_client,
)
from simulations.kwok.export import (
    exported_jobs,
    namespace_documents,
    simulated_runtime,
    stage_documents,
    trainjob_document,
)
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
    waiting: dict[str, str] = field(default_factory=dict)  # key -> Kueue's last "why not admitted" message

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
        if reserved and reserved.get("status") == "False" and reserved.get("message"):
            self.waiting[key] = str(reserved["message"])  # Kueue's pending reason, e.g. the quota short
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

    def unfinished(self, end: float) -> list[dict[str, Any]]:
        """Every job the run did not see finish, with why: never submitted before the run stopped,
        no Workload seen, waiting (Kueue's message), removed and waiting again, or still running."""
        listed: list[dict[str, Any]] = []
        for key in sorted(self.jobs, key=lambda k: (self.jobs[k].submit_time, k)):
            if key in self.finished:
                continue
            record = self.metrics.jobs.get(key)
            if record is None:
                state, reason = "unsubmitted", f"not submitted before the run stopped at {end:,.0f} s"
            elif key in self.admitted:
                state = "running"
                reason = f"admitted, not finished when the run stopped at {end:,.0f} s"
            else:
                removals = record.preemptions + record.evictions
                why = self.waiting.get(key, "no reason given by Kueue yet (no QuotaReserved=False condition seen)")
                state = "requeued" if removals else "pending"
                reason = f"removed {removals} time(s) (preempted or evicted), waiting again: {why}" if removals else why
            listed.append({"job": key, "state": state, "reason": reason})
        return listed

    def all_finished(self) -> bool:
        return len(self.finished) == len(self.jobs)

    def handle_all(self, events: Iterable[dict[str, Any]]) -> None:
        for event in events:
            self.handle(event)


class _WorkloadFeed:
    """An informer sink that hands every Workload it sees to the collector."""

    def __init__(self, collector: WorkloadEventCollector, done: asyncio.Event) -> None:
        self.collector = collector
        self.done = done

    def apply(self, document: dict[str, Any]) -> None:
        self.collector.handle({"type": "MODIFIED", "object": document})
        if self.collector.all_finished():
            self.done.set()

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        """A deleted Workload changes no metric: its finish or eviction was seen before."""

    def mark_loaded(self) -> None:
        """Nothing waits for the first list."""


def _scenario_documents(built: BuiltScenario, jobs: list[JobSpec]) -> list[dict[str, Any]]:
    """Namespaces, Stages, Nodes, the runtime and the Kueue objects, in the order they must exist."""
    documents = [*namespace_documents(built, jobs), *stage_documents(built)]
    documents.extend(built.node_documents)
    documents.append(simulated_runtime())
    documents.extend(obj.to_dict() for obj in built.objects)
    return documents


async def _run(built: BuiltScenario, kubeconfig: Path, seed: int, timeout: float, speedup: float) -> dict[str, Any]:
    jobs = list(exported_jobs(built, seed, speedup))
    metrics = MetricsRecorder(built.capacity, built.nominal)
    origin = time.time()
    collector = WorkloadEventCollector(metrics, {f"{j.team}/{j.name}": j for j in jobs}, origin, time_scale=speedup)
    queue_of = {
        obj.namespace: obj.to_dict()["spec"]["clusterQueue"] for obj in built.objects if obj.kind == "LocalQueue"
    }
    api_client = await load_api_client(kubeconfig)
    try:
        kube = KubeClient(api_client)
        for document in _scenario_documents(built, jobs):
            await create_unless_exists(kube, document)  # a rerun on the same cluster keeps what exists

        async def submit() -> None:
            for job in jobs:
                delay = origin + job.submit_time - time.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                key = f"{job.team}/{job.name}"
                collector.submitted(key, queue_of.get(job.team, job.team), collector.since_origin(time.time()))
                await create_unless_exists(kube, trainjob_document(job))

        done = asyncio.Event()
        informer = Informer(kube, "Workload", _WorkloadFeed(collector, done))
        tasks = [asyncio.create_task(submit()), asyncio.create_task(informer.run())]
        try:
            await asyncio.wait_for(done.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await close_api_client(api_client)
    metrics.end_time = collector.since_origin(time.time())
    summary = metrics.summary()
    summary["backend"] = "kwok"
    summary["scenario"] = built.scenario.name
    summary["unfinished_jobs"] = collector.unfinished(metrics.end_time)
    return summary


def run_on_kwok(
    built: BuiltScenario, kubeconfig: Path, seed: int = 1, timeout: float = 3600.0, speedup: float = 1.0
) -> dict[str, Any]:
    """Run ``built`` on the cluster of ``kubeconfig``; ``speedup`` N submits N times faster."""
    return asyncio.run(_run(built, kubeconfig, seed, timeout, speedup))
