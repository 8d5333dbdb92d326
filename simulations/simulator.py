"""The discrete-event loop: arrivals, admission cycles, pod stages, completions, failures.

Virtual time jumps from one batch of simultaneous events to the next. After a batch that can
change what fits (an arrival, a completion, an eviction, a repair, an engine timer) the loop
asks the engine for one admission cycle at that instant, then plays the decisions out: every
admitted gang's pods go through the KWOK Pod stages (pod-ready delay and jitter per pod,
pod-complete after the job's duration from its annotation); preempted and evicted gangs lose
their pending stage events (a generation counter voids them) and their nodes. The engine
requeues what it removed; the simulator only reports. Invariants are checked on every
admission (``observers``, in a second process on a large run); metrics are recorded on every
change.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from simulations.engine_driver import Admitted, EngineDriver, Removed
from simulations.events import Event, EventKind, EventQueue, RandomStreams
from simulations.gc_settings import batch_collector
from simulations.kwok import (
    POD_COMPLETE_DELAY_ANNOTATION,
    POD_COMPLETE_JITTER_ANNOTATION,
    PodLifecycle,
    load_stages,
    simulated_pod,
)
from simulations.metrics import MetricsRecorder
from simulations.never_ran import never_ran as list_never_ran
from simulations.never_ran import unfinished as list_unfinished
from simulations.node_failures import NodeFailures
from simulations.observers import ObserverMode, ObserverProcess, Observers, choose_mode, start_observers
from simulations.result import ProgressCallback, SimulationResult

__all__ = ["ProgressCallback", "Simulation", "SimulationResult", "simulate"]
from simulations.scenarios import BuiltScenario
from simulations.workloads import JobSpec

if TYPE_CHECKING:
    from scheduler.topology.policy import PlacementPolicy

FOREGROUND = frozenset(
    {EventKind.ARRIVAL, EventKind.GANG_READY, EventKind.GANG_COMPLETE, EventKind.ENGINE_TIMER, EventKind.NODE_REPAIR}
)
MAX_SAMPLES = 2000
# The one template the loop builds its pods from (``simulated_pod`` with no labels and the two
# completion-delay annotations): gangs share its stage chain unless a selector tells them apart.
_POD_TEMPLATE = "simulated-trainjob-pod"


@dataclass(slots=True, init=False)
class _Running:
    job: JobSpec
    amount: int  # primary resource held
    generation: int
    admitted_at: float
    finishes_at: float | None  # when its pod stages complete the job; None: they never do

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        job: JobSpec,
        amount: int,
        generation: int,
        admitted_at: float = 0.0,
        finishes_at: float | None = None,
    ) -> None:
        self.job = job
        self.amount = amount
        self.generation = generation
        self.admitted_at = admitted_at
        self.finishes_at = finishes_at


class PlayedDecisions(Protocol):
    """Told each decision the run acts on, as it plays it out (the sandbox comparison records them)."""

    def admitted(self, decision: Admitted, now: float) -> None: ...

    def removed(self, removed: Removed, now: float, preempted: bool) -> None: ...


class Simulation:
    def __init__(
        self,
        built: BuiltScenario,
        seed: int = 1,
        progress: ProgressCallback | None = None,
        horizon: float | None = None,
        observers: ObserverMode = "auto",
        played: PlayedDecisions | None = None,
        placement_policy: PlacementPolicy | None = None,  # None: the engine's own placer
    ) -> None:
        self.built = built
        self.played = played
        self.seed = seed
        self.progress = progress
        self.horizon = horizon if horizon is not None else built.horizon
        scenario = built.scenario
        self.streams = RandomStreams(seed)
        self.driver = EngineDriver(scenario.fair_sharing, scenario.pods_ready_timeout, placement_policy)
        for obj in built.objects:
            self.driver.apply(obj)
        for node in built.nodes:
            self.driver.apply(node)
        # the checks that watch the run (invariants, t*, fragmentation), in this process or, once
        # the run starts, a second one; ``self.ledger`` is theirs as built: with a second
        # process, only its fixed facts (names, labels, allocatable) are read here
        self._observer_mode = choose_mode(observers, built)
        self.observers: Observers | ObserverProcess = Observers(built)
        self.ledger = self.observers.ledger
        self.lifecycle = PodLifecycle(load_stages(scenario.stages))
        self.metrics = MetricsRecorder(
            built.capacity,
            built.nominal,
            "GPUs" if built.primary_resource != "cpu" else "CPU cores",
            warmup=scenario.warmup_seconds,
        )
        self.queue = EventQueue()
        self.jobs: dict[str, JobSpec] = {}
        self.running: dict[str, _Running] = {}
        self.generation: dict[str, int] = {}
        self.pending_shapes: Counter[tuple[int, int, int]] = Counter()  # (total gpus, per pod, pods)
        self.stage_rng = self.streams.python("stages")
        self.failures = NodeFailures(
            scenario.failures,
            self.ledger,
            built.node_documents,
            self.driver,
            self.streams.python("failures"),
            self._push,
        )
        self.foreground = 0
        self.cycles = 0
        self.engine_seconds = 0.0
        self.gone = 0  # finished jobs
        self._timer_at: float | None = None
        self._due_timer_pushed_at: float | None = None
        self._arriving: JobSpec | None = None
        self._sample_every = scenario.sample_seconds

    # ------------------------------------------------------------------------------ helpers

    def _push(self, event: Event) -> None:
        if event.kind in FOREGROUND:
            self.foreground += 1
        self.queue.push(event)

    def _amount(self, job: JobSpec) -> int:
        if self.built.primary_resource == "cpu":
            return job.cpu_milli * job.nodes // 1000
        return job.gpus

    def _next_arrival(self, stream: Iterator[JobSpec]) -> None:
        job = next(stream, None)
        if job is not None:
            self._push(Event(job.submit_time, EventKind.ARRIVAL, job.name, index=-1))
            self._arriving = job

    # ------------------------------------------------------------------------------- events

    def _arrive(self, job: JobSpec, now: float) -> None:
        started = time.perf_counter()
        key = self.driver.submit(job, now)
        self.engine_seconds += time.perf_counter() - started
        self.jobs[key] = job
        self.metrics.submitted(key, job.team, self._amount(job), now)
        self.pending_shapes[(job.gpus, job.gpus_per_node, job.nodes)] += 1

    def _admit(self, decision: Admitted, now: float) -> None:
        if self.played is not None:
            self.played.admitted(decision, now)
        job = self.jobs[decision.key]
        self.observers.admitted(decision, job, now)
        amount = self._amount(job)
        self.metrics.admitted(decision.key, amount, now)
        shape = (job.gpus, job.gpus_per_node, job.nodes)
        self.pending_shapes[shape] -= 1
        if not self.pending_shapes[shape]:
            self.pending_shapes.pop(shape)  # dict.pop: Counter's own __delitem__ is Python code
        generation = self.generation.get(decision.key, 0) + 1
        self.generation[decision.key] = generation
        self.running[decision.key] = _Running(job, amount, generation, admitted_at=now)
        delay = f"{round(job.duration * 1000)}ms"
        pod = simulated_pod(
            job.name,
            job.team,
            {},
            {POD_COMPLETE_DELAY_ANNOTATION: delay, POD_COMPLETE_JITTER_ANNOTATION: delay},
        )
        # every pod comes from simulated_pod with the same labels and annotation keys
        outcome = self.lifecycle.run_gang(pod, job.nodes, now, self.stage_rng, template=_POD_TEMPLATE)
        if outcome.ready_after is not None:
            self._push(Event(now + outcome.ready_after, EventKind.GANG_READY, decision.key, generation))
        if outcome.finished_after is not None:
            self.running[decision.key].finishes_at = now + outcome.finished_after
            self._push(Event(now + outcome.finished_after, EventKind.GANG_COMPLETE, decision.key, generation))

    def _remove(self, removed: Removed, now: float, preempted: bool) -> None:
        running = self.running.pop(removed.key, None)
        if running is None:
            return
        if self.played is not None:
            self.played.removed(removed, now, preempted)
        self.generation[removed.key] = running.generation + 1  # voids its pending stage events
        self.observers.released(removed.key)
        self.metrics.released(removed.key, running.amount, now, requeued=True)
        if preempted:
            self.metrics.preempted(removed.key, removed.reason, now)
        else:
            self.metrics.evicted(removed.key, removed.reason, now)
        job = running.job
        self.pending_shapes[(job.gpus, job.gpus_per_node, job.nodes)] += 1

    def _node_lost(self, removed: Removed, now: float) -> None:
        self._remove(removed, now, preempted=False)

    def _complete(self, key: str, now: float) -> None:
        running = self.running.pop(key)
        started = time.perf_counter()
        self.driver.finish(key, now)  # the engine releases quota and nodes: engine time
        self.engine_seconds += time.perf_counter() - started
        self.observers.released(key)
        self.metrics.released(key, running.amount, now, requeued=False)
        self.jobs.pop(key, None)
        self.gone += 1

    # --------------------------------------------------------------------------------- loop

    def run(self) -> SimulationResult:
        if isinstance(self.observers, Observers):
            # forked here, not at construction: a simulation built and never run leaves no process
            self.observers = start_observers(self.observers, self._observer_mode)
        with batch_collector():
            return self._run()

    def _run(self) -> SimulationResult:
        wall = time.perf_counter()
        stream = self.built.jobs(self.streams)
        self._arriving = None
        self._next_arrival(stream)
        self._push(Event(0.0, EventKind.SAMPLE, ""))
        self.failures.schedule_next(0.0)
        now = 0.0
        last_progress = 0.0
        while self.foreground > 0:
            batch = self.queue.pop_batch()
            now = batch[0].time
            if self.horizon is not None and now > self.horizon:
                now = self.horizon
                break
            dirty = False
            sample = False
            for event in batch:
                if event.kind in FOREGROUND:
                    self.foreground -= 1
                if event.kind is EventKind.SAMPLE:
                    sample = True
                else:
                    dirty = self._handle(event, now, stream) or dirty
            if dirty:
                self._cycle(now)
            if sample:
                self._sample(now)
            if self.progress is not None and (now - last_progress > 0 or not self.foreground):
                self.progress(self.gone, self.built.job_count, now)
                last_progress = now
        return self._finish(now, wall)

    def _handle(self, event: Event, now: float, stream: Iterator[JobSpec]) -> bool:
        """Plays one event out; True when it can change what fits (an admission cycle is due)."""
        kind = event.kind
        if kind is EventKind.ARRIVAL:
            job = self._arriving
            assert job is not None
            self._arrive(job, now)
            self._next_arrival(stream)
            return True
        current = self.generation.get(event.subject) == event.generation and event.subject in self.running
        if kind is EventKind.GANG_READY:
            if current:
                self.driver.pods_ready(event.subject, now)
                self.metrics.running(event.subject, now)
            return False
        if kind is EventKind.GANG_COMPLETE:
            if current:
                self._complete(event.subject, now)
            return current
        if kind is EventKind.ENGINE_TIMER:
            self._timer_at = None
        elif kind is EventKind.NODE_FAILURE:
            self.failures.fail(event.subject, now, self._node_lost)
        elif kind is EventKind.NODE_REPAIR:
            self.failures.repair(event.subject)
        return True

    def _sample(self, now: float) -> None:
        self.observers.sample(self.pending_shapes)
        self.metrics.sample(now)  # its fragmentation figure comes from the observers at the end
        if len(self.metrics.samples) >= MAX_SAMPLES:
            self.metrics.samples = self.metrics.samples[::2]
            self._sample_every *= 2
        if self.foreground > 0:
            self._push(Event(now + self._sample_every, EventKind.SAMPLE, ""))

    def _finish(self, now: float, wall: float) -> SimulationResult:
        self.metrics.end_time = now
        self.observers.sample(self.pending_shapes)
        self.metrics.sample(now)
        observed = self.observers.finish()
        self.metrics.observed(observed.fragmented, observed.tiers, observed.tier_gaps)
        if self.progress is not None:
            self.progress(self.gone, self.built.job_count, now)
        # after the loop: asking the engine changes no decision
        never_ran = list_never_ran(self.metrics, self.jobs, self.driver, self.ledger)
        holding = {key: (r.admitted_at, r.finishes_at) for key, r in self.running.items()}
        unfinished = list_unfinished(self.metrics, self.jobs, holding, self.driver, now)
        return SimulationResult(
            scenario=self.built.scenario.name,
            seed=self.seed,
            summary=self.metrics.summary(),
            invariants=observed.invariants,
            events=self.queue.popped,
            wall_seconds=time.perf_counter() - wall,
            engine_seconds=self.engine_seconds,
            cycles=self.cycles,
            samples=self.metrics.samples,
            wait_times=self.metrics.wait_times(),
            notes=dict(self.built.notes),
            never_ran=never_ran,
            unfinished=unfinished,
        )

    def _cycle(self, now: float) -> None:
        started = time.perf_counter()
        decisions = self.driver.schedule(now)
        self.engine_seconds += time.perf_counter() - started
        self.cycles += 1
        # One engine call may run several rounds: a gang admitted in one round can be preempted
        # in a later one, and a preempted gang re-admitted. The lists do not keep that order,
        # so the final state decides: the last admission of a gang the engine still holds wins.
        last_admission = {decision.key: decision for decision in decisions.admitted}
        for removed, preempted in [(r, True) for r in decisions.preempted] + [(r, False) for r in decisions.evicted]:
            if removed.key in self.running and (
                removed.key in last_admission or not self.driver.is_admitted(removed.key)
            ):
                self._remove(removed, now, preempted=preempted)
            elif removed.key not in self.running and removed.key in self.metrics.jobs:
                # admitted and preempted within this one call: it never ran, but it was preempted
                if preempted:
                    self.metrics.preempted(removed.key, removed.reason, now)
                else:
                    self.metrics.evicted(removed.key, removed.reason, now)
        for key, decision in last_admission.items():
            if key not in self.running and self.driver.is_admitted(key):
                self._admit(decision, now)
        timer = self.driver.next_timer()
        if timer is not None and timer <= now and self._due_timer_pushed_at != now:
            # Due already (an eviction inside this call with no backoff): another engine call at
            # this same instant routes it. Once per instant, so an engine that kept such a timer
            # could not spin the loop.
            self._due_timer_pushed_at = now
            self._push(Event(now, EventKind.ENGINE_TIMER, ""))
        elif timer is not None and timer > now and (self._timer_at is None or timer < self._timer_at):
            self._timer_at = timer
            self._push(Event(timer, EventKind.ENGINE_TIMER, ""))
        elif timer is not None and not math.isfinite(timer):
            self._timer_at = None


def simulate(built: BuiltScenario, seed: int = 1, progress: ProgressCallback | None = None) -> SimulationResult:
    return Simulation(built, seed, progress).run()
