"""A scenario through the whole service in lockstep virtual time: ``LockstepRun``.

The sandbox's clock is the driver's. It plays the scenario's events in virtual-time order, one
instant at a time: pods whose KWOK pod-complete delay has run out are set Succeeded over the API
(the stage's effect, as KWOK's controller writes it), then the TrainJobs arriving at that
instant are created over the API. Then it waits until the service is quiescent - every work
queue of the controllers and stand-ins empty, none busy, no timer due soon, and the store's
revision still - before time moves on. Whatever the service decided meanwhile (Workloads
admitted or evicted, pods bound to nodes) is stamped with that instant: a decision is what the
server committed, observed in process from the store (no watch lag).

With arrivals handled one instant at a time, each instant gets its own admission cycle, as in
the embedded simulator; what the two runs decide can then be compared decision by decision.
Pods' KWOK delays are drawn with the simulator's own ``PodLifecycle`` and random stream, in
admission order, so with jitter-free stages the sandbox's pods end when the simulator's do.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable, Iterable
from typing import Any

from sandbox.apiserver import FakeApiServer
from sandbox.apiserver.records import StoredEvent
from sandbox.compare.inputs import trainjob_document
from sandbox.compare.records import Decision, RunRecord, TrackedJob, amount_of, nodes_of
from sandbox.compare.settle import Quiescence
from scheduler.controllers.workqueue import WorkQueue
from scheduler.kube import KubeApiError, KubeClient, patch_status
from simulations.events import RandomStreams
from simulations.kwok import (
    POD_COMPLETE_DELAY_ANNOTATION,
    POD_COMPLETE_JITTER_ANNOTATION,
    PodLifecycle,
    load_stages,
    simulated_pod,
)
from simulations.metrics import MetricsRecorder
from simulations.scenarios import BuiltScenario
from simulations.workloads import JobSpec

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


class LockstepRun:
    """``await LockstepRun(built, client, server, queues, seed).run()`` -> ``RunRecord``.

    ``queues`` returns every work queue of the service and the stand-ins (the quiescence check).
    """

    def __init__(
        self,
        built: BuiltScenario,
        client: KubeClient,
        server: FakeApiServer,
        queues: Callable[[], Iterable[WorkQueue[Any]]],
        seed: int = 1,
        *,
        runtime_name: str = "torch-distributed",
        settle_timeout: float = 60.0,
        speedup: float | None = None,
        progress: Callable[[int, int, float], None] | None = None,
    ) -> None:
        self.built = built
        self.client = client
        self.server = server
        self.queues = queues
        self.runtime_name = runtime_name
        self.settle_timeout = settle_timeout
        self.progress = progress
        self.speedup = speedup  # None: lockstep; N: virtual time runs N times faster than the wall clock
        self._origin = 0.0  # loop time of virtual time 0 (paced runs)
        self._wake = asyncio.Event()
        self.streams = RandomStreams(seed)
        self.stage_rng = self.streams.python("stages")
        self.lifecycle = PodLifecycle(load_stages(built.scenario.stages))
        self.metrics = MetricsRecorder(
            built.capacity, built.nominal, "GPUs" if built.primary_resource != "cpu" else "CPU cores"
        )
        self.record = RunRecord()
        self.jobs: dict[str, TrackedJob] = {}  # "namespace/name" -> job
        self.by_workload: dict[str, str] = {}  # "namespace/workload" -> job key
        self.now = 0.0
        self.completions: list[tuple[float, int, str, int]] = []  # (time, tie, job key, generation)
        self._tie = 0
        self._new: list[tuple[str, str]] = []  # (job key, "admitted"|"preempted"|"evicted") seen this instant
        self.finished = 0
        self.quiescence = Quiescence(server, queues, settle_timeout)

    # ------------------------------------------------------------------ observation

    def observe(self, event: StoredEvent) -> None:
        """Every committed write, in order (a store observer): decisions and pods of our jobs.

        In lockstep the decisions wait for the instant to settle; paced, they are stamped at once
        with the sped-up clock's reading (an admission's pods are bound later: its nodes are read
        when its completion comes due).
        """
        kind = event.rtype.kind
        if kind == "Workload":
            self._workload(event)
            if self.speedup is not None and self._new:
                self.now = max(self.now, self._virtual_now())
                self._stamp()
                self._wake.set()
        elif kind == "Pod":
            self._pod(event)

    def _workload(self, event: StoredEvent) -> None:
        metadata = event.obj.get("metadata") or {}
        namespace = str(metadata.get("namespace"))
        workload_key = f"{namespace}/{metadata.get('name')}"
        key = self.by_workload.get(workload_key)
        if key is None:
            for reference in metadata.get("ownerReferences") or ():
                if reference.get("kind") == "TrainJob":
                    key = f"{namespace}/{reference.get('name')}"
            if key is None or key not in self.jobs:
                return
            self.by_workload[workload_key] = key
        job = self.jobs[key]
        if event.type == "DELETED":
            return
        job.workload = event.obj
        status = event.obj.get("status") or {}
        admitted = bool(status.get("admission"))
        finished = any(
            c.get("type") == "Finished" and c.get("status") == "True" for c in status.get("conditions") or ()
        )
        if finished:
            if not job.finished:
                job.finished = True
                self._new.append((key, "finished"))
        elif admitted and not job.admitted:
            job.admitted = True
            self._new.append((key, "admitted"))
        elif not admitted and job.admitted:
            job.admitted = False
            evicted = next((c for c in status.get("conditions") or () if c.get("type") == "Evicted"), None)
            reason = str((evicted or {}).get("reason") or "")
            self._new.append((key, "preempted" if reason == "Preempted" else "evicted"))

    def _pod(self, event: StoredEvent) -> None:
        metadata = event.obj.get("metadata") or {}
        owner = (metadata.get("labels") or {}).get(JOBSET_NAME_LABEL)
        if owner is None:
            return
        job = self.jobs.get(f"{metadata.get('namespace')}/{owner}")
        if job is None:
            return
        if event.type == "DELETED":
            job.pods.pop(str(metadata.get("name")), None)
        else:
            job.pods[str(metadata.get("name"))] = event.obj
            if job.running and job.admission is not None and (event.obj.get("spec") or {}).get("nodeName"):
                job.admission.nodes = nodes_of(job)

    # ------------------------------------------------------------------ the loop

    async def run(self) -> RunRecord:
        wall = time.perf_counter()
        requests_before = len(self.server.requests)
        self.server.store.observers.append(self.observe)
        try:
            await self._run()
        finally:
            self.server.store.observers.remove(self.observe)
        self.metrics.end_time = self.now
        self.metrics.sample(self.now, 0)
        self.record.summary = self.metrics.summary()
        self.record.jobs = list(self.jobs)
        self.record.wall_seconds = time.perf_counter() - wall
        self.record.api_requests = len(self.server.requests) - requests_before
        return self.record

    async def _run(self) -> None:
        stream = self.built.jobs(self.streams)
        arriving = next(stream, None)
        total = self.built.job_count
        await self.quiescence.settle(self.now)
        loop = asyncio.get_running_loop()
        self._origin = loop.time()
        while arriving is not None or self.completions:
            candidates = [arriving.submit_time] if arriving is not None else []
            if self.completions:
                candidates.append(self.completions[0][0])
            due = min(candidates)
            if self.speedup is not None and not await self._paced_until(due):
                continue  # something came due sooner (an admission scheduled a completion)
            self.now = due
            while self.completions and self.completions[0][0] <= self.now:
                _, _, key, generation = heapq.heappop(self.completions)
                await self._complete(key, generation)
            while arriving is not None and arriving.submit_time <= self.now:
                await self._arrive(arriving)
                arriving = next(stream, None)
            if self.speedup is None:
                await self.quiescence.settle(self.now)
                self._stamp()
            if self.progress is not None:
                self.progress(self.finished, total, self.now)
        if self.speedup is not None:
            await self.quiescence.settle(self.now)  # the last completions' effects
            self.now = self._virtual_now()
            self._stamp()

    def _virtual_now(self) -> float:
        assert self.speedup is not None
        return (asyncio.get_running_loop().time() - self._origin) * self.speedup

    async def _paced_until(self, due: float) -> bool:
        """Sleep until virtual time ``due`` on the sped-up wall clock; False if woken earlier."""
        assert self.speedup is not None
        delay = due / self.speedup - (asyncio.get_running_loop().time() - self._origin)
        if delay > 0:
            self._wake.clear()
            try:
                async with asyncio.timeout(delay):
                    await self._wake.wait()
                return False
            except TimeoutError:
                pass
        return True

    async def _arrive(self, job: JobSpec) -> None:
        key = f"{job.team}/{job.name}"
        self.jobs[key] = TrackedJob(job)
        self.metrics.submitted(key, job.team, amount_of(self.built, job), self.now)
        try:
            await self.client.create(trainjob_document(job, self.runtime_name))
        except KubeApiError as error:
            if "denied the request" not in error.message:
                raise RuntimeError(f"the sandbox refused TrainJob {key}: {error}") from None
            # the validating webhook refused it (a job that can never fit): no admission will follow
            self.record.add(key, Decision(self.now, "refused", reason=error.message))

    async def _complete(self, key: str, generation: int) -> None:
        """KWOK's pod-complete stage: every pod of the job's gang becomes Succeeded."""
        job = self.jobs[key]
        if job.generation != generation or not job.running:
            return  # preempted or evicted since: that run's completion never comes
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        writes = []
        for name, pod in list(job.pods.items()):
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            containers = [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {"exitCode": 0, "reason": "Completed", "startedAt": stamp, "finishedAt": stamp}
                    },
                }
                for c in (pod.get("spec") or {}).get("containers") or ()
            ]
            status = {"phase": "Succeeded", "containerStatuses": containers}
            writes.append(patch_status(self.client, "Pod", name, job.spec.team, status))
        await asyncio.gather(*writes)

    def _stamp(self) -> None:
        """Stamp what the service decided since the last instant with this instant's time."""
        new, self._new = self._new, []
        for key, kind in new:
            job = self.jobs[key]
            amount = amount_of(self.built, job.spec)
            if kind == "admitted":
                if not job.admitted or job.finished or job.running:
                    continue  # admitted and taken back within this instant: it never ran
                job.admission = self._admission(job)
                self.record.add(key, job.admission)
                self.metrics.admitted(key, amount, self.now)
                job.running = True
                job.generation += 1
                self._schedule_completion(key, job)
            elif kind == "finished":
                if job.running:
                    self.metrics.released(key, amount, self.now, requeued=False)
                    job.running = False
                self.finished += 1
            elif job.running:
                self.record.add(key, Decision(self.now, kind))
                self.metrics.released(key, amount, self.now, requeued=True)
                if kind == "preempted":
                    self.metrics.preempted(key, "Preempted")
                else:
                    self.metrics.evicted(key, kind)
                job.running = False
                job.generation += 1  # voids the scheduled completion

    def _admission(self, job: TrackedJob) -> Decision:
        admission = ((job.workload or {}).get("status") or {}).get("admission") or {}
        flavors: dict[str, str] = {}
        for assignment in admission.get("podSetAssignments") or ():
            flavors.update(assignment.get("flavors") or {})
        nodes = nodes_of(job)
        return Decision(
            self.now,
            "admitted",
            str(admission.get("clusterQueue") or ""),
            tuple(sorted(flavors.items())),
            tuple(nodes),
        )

    def _schedule_completion(self, key: str, job: TrackedJob) -> None:
        spec = job.spec
        delay = f"{round(spec.duration * 1000)}ms"
        pod = simulated_pod(
            spec.name, spec.team, {}, {POD_COMPLETE_DELAY_ANNOTATION: delay, POD_COMPLETE_JITTER_ANNOTATION: delay}
        )
        outcome = self.lifecycle.run_gang(pod, spec.nodes, self.now, self.stage_rng)
        if outcome.finished_after is None:
            return
        self._tie += 1
        heapq.heappush(self.completions, (self.now + outcome.finished_after, self._tie, key, job.generation))
