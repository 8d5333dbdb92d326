"""`trainyard bench admission`: Kueue's performance scenarios through the engine, in virtual time.

Workloads arrive on Kueue's schedule and finish ``runtime`` after their admission (a preempted
workload starts over when re-admitted). The engine's CPU time is measured around every engine
call only, so the figure is the engine's own throughput: decisions (admissions + preemptions)
per CPU second. Times to admission and usage are in virtual seconds, comparable with Kueue's
published thresholds (kueue.md §5).
"""

from __future__ import annotations

import argparse
import heapq
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainyard.native.activation import engine_build

if TYPE_CHECKING:
    from scheduler.engine import CycleResult
    from simulations.workloads import JobSpec

# Kueue's scenarios are defined once, in simulations.scenarios (KUEUE_BASELINE, KUEUE_LARGE).
SCENARIOS = ("kueue-baseline", "kueue-large")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", choices=SCENARIOS, default="kueue-baseline")
    parser.add_argument(
        "--one-per-cycle", action="store_true", help="admit one head per ClusterQueue per cycle, as Kueue does"
    )
    parser.add_argument(
        "--real", action="store_true", help="real Kueue v0.17, then trainyard's controller, on a real cluster"
    )
    parser.add_argument("--workloads", type=int, default=None, help="with --real: the first N Workloads (default: all)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="with --real: seconds each side may take")
    parser.add_argument("--binaries", type=Path, metavar="DIR", help="with --real: where the component binaries are")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.real:
        return _run_real(args)
    from simulations.events import RandomStreams
    from simulations.scenarios import BUILTIN, build

    perf = BUILTIN[args.scenario].kueue_perf
    assert perf is not None
    built = build(BUILTIN[args.scenario])
    wall_start = time.perf_counter()
    replay = _Replay(perf.classes, not args.one_per_cycle)
    started = time.process_time()
    for obj in built.objects:
        replay.engine.apply(obj)
    replay.engine_cpu += time.process_time() - started
    arrivals = list(built.jobs(RandomStreams(0)))
    replay.run(arrivals)
    total_nominal = perf.cohorts * perf.queues_per_cohort * perf.nominal_cpu
    waits = replay.time_to_admission
    end_time, engine_cpu = replay.end_time, replay.engine_cpu
    return {
        "scenario": args.scenario,
        "workloads": len(arrivals),
        "finished": sum(len(v) for v in waits.values()),
        "decisions": replay.decisions,
        "engine_cpu_seconds": round(engine_cpu, 3),
        "decisions_per_second": round(replay.decisions / engine_cpu, 1) if engine_cpu else None,
        "avg_time_to_admission_s": {
            name: round(sum(values) / len(values), 3) if values else None for name, values in waits.items()
        },
        "usage_pct": round(100.0 * replay.usage_integral / (total_nominal * end_time), 2) if end_time else None,
        "virtual_seconds": round(end_time, 3),
        "wall_seconds": round(time.perf_counter() - wall_start, 3),
        "engine_build": engine_build(),
    }


def _run_real(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    from trainyard.benchmarks.admission_real import measure

    if args.workloads is not None and args.workloads < 1:
        raise SystemExit("bench admission: --workloads must be at least 1")
    result = asyncio.run(measure(args.scenario, args.workloads, args.binaries, args.timeout))
    return {**result, "engine_build": engine_build()}


class _Replay:
    """Kueue's arrival schedule through one engine; the engine's CPU time is summed around its calls."""

    def __init__(self, classes: tuple[tuple[str, int, int, float, int, float], ...], many_per_cycle: bool) -> None:
        from scheduler.engine import AdmissionEngine, EngineConfig
        from simulations.engine_driver import EngineDriver

        self.cpu_of = {name: cpu for name, _, cpu, *_ in classes}
        self.runtime_of = {name: runtime for name, _, _, runtime, *_ in classes}
        # The simulator's Workload shapes and its per-shape template cache; its own engine is unused.
        self.workload_of = EngineDriver().workload
        self.engine = AdmissionEngine(EngineConfig(multiple_admissions_per_cycle=many_per_cycle))
        self.engine_cpu = 0.0
        self.class_of: dict[str, str] = {}  # key -> workload class
        # events: (time, order, kind, key, admission serial) — arrivals before finishes at one instant
        self.events: list[tuple[float, int, str, str, int]] = []
        self.serial = 0
        self.admitted_serial: dict[str, int] = {}
        self.admitted_time: dict[str, float] = {}
        self.created: dict[str, float] = {}
        self.time_to_admission: dict[str, list[float]] = {name: [] for name in self.cpu_of}
        self.usage_integral = 0.0  # cpu-seconds
        self.running_cpu = 0
        self.decisions = 0
        self.end_time = 0.0

    def run(self, arrivals: list[JobSpec]) -> None:
        events, index, last_time = self.events, 0, 0.0
        while index < len(arrivals) or events:
            next_arrival = arrivals[index].submit_time if index < len(arrivals) else float("inf")
            now = min(next_arrival, events[0][0] if events else float("inf"))
            self.usage_integral += self.running_cpu * (now - last_time)
            last_time = now
            batch = []
            while index < len(arrivals) and arrivals[index].submit_time == now:
                batch.append(arrivals[index])
                index += 1
            workloads = [self.workload_of(job) for job in batch]  # the client's cost, not the engine's
            started = time.process_time()
            for job, workload in zip(batch, workloads, strict=True):
                key = self.engine.submit(workload, now)
                self.class_of[key] = str(job.priority_class)
                self.created[key] = now
            self._finish_due(now)
            result = self.engine.schedule(now)
            self.engine_cpu += time.process_time() - started
            self._record(result, now)

    def _finish_due(self, now: float) -> None:
        events = self.events
        while events and events[0][0] == now:
            _, _, _, key, admission = heapq.heappop(events)
            if self.admitted_serial.get(key) == admission:  # still the admission that scheduled this finish
                self.engine.finish(key, now)
                self.running_cpu -= self.cpu_of[self.class_of[key]]
                del self.admitted_serial[key]
                self.time_to_admission[self.class_of[key]].append(self.admitted_time[key] - self.created[key])
                self.end_time = now

    def _record(self, result: CycleResult, now: float) -> None:
        self.decisions += result.decisions
        for preempted in result.preempted:
            if preempted.key in self.admitted_serial:
                del self.admitted_serial[preempted.key]
                self.running_cpu -= self.cpu_of[self.class_of[preempted.key]]
        for admitted in result.admitted:
            self.serial += 1
            self.admitted_serial[admitted.key] = self.serial
            self.admitted_time[admitted.key] = now
            workload_class = self.class_of[admitted.key]
            self.running_cpu += self.cpu_of[workload_class]
            event = (now + self.runtime_of[workload_class], self.serial, "finish", admitted.key, self.serial)
            heapq.heappush(self.events, event)
