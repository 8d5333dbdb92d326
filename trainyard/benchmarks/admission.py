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
from typing import Any

# Kueue's scenarios are defined once, in simulations.scenarios (KUEUE_BASELINE, KUEUE_LARGE).
SCENARIOS = ("kueue-baseline", "kueue-large")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", choices=SCENARIOS, default="kueue-baseline")
    parser.add_argument(
        "--one-per-cycle", action="store_true", help="admit one head per ClusterQueue per cycle, as Kueue does"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    from scheduler.engine import AdmissionEngine, EngineConfig
    from simulations.engine_driver import EngineDriver
    from simulations.events import RandomStreams
    from simulations.scenarios import BUILTIN, build

    perf = BUILTIN[args.scenario].kueue_perf
    assert perf is not None
    built = build(BUILTIN[args.scenario])
    cpu_of = {name: cpu for name, _, cpu, *_ in perf.classes}
    runtime_of = {name: runtime for name, _, _, runtime, *_ in perf.classes}
    # The simulator's Workload shapes and its per-shape template cache; its own engine is unused.
    workload_of = EngineDriver().workload
    wall_start = time.perf_counter()
    engine = AdmissionEngine(EngineConfig(multiple_admissions_per_cycle=not args.one_per_cycle))
    engine_cpu = 0.0

    def timed_start() -> float:
        return time.process_time()

    started = timed_start()
    for obj in built.objects:
        engine.apply(obj)
    engine_cpu += time.process_time() - started

    pending_arrivals = list(built.jobs(RandomStreams(0)))
    workloads_by_key: dict[str, str] = {}  # key -> workload class
    # events: (time, order, kind, key, admission serial) — arrivals before finishes at one instant
    events: list[tuple[float, int, str, str, int]] = []
    serial = 0
    admitted_serial: dict[str, int] = {}
    admitted_time: dict[str, float] = {}
    created: dict[str, float] = {}
    time_to_admission: dict[str, list[float]] = {name: [] for name in cpu_of}
    usage_integral = 0.0  # cpu-seconds
    running_cpu = 0
    last_time = 0.0
    decisions = 0
    arrival_index = 0
    end_time = 0.0

    while arrival_index < len(pending_arrivals) or events:
        next_arrival = (
            pending_arrivals[arrival_index].submit_time if arrival_index < len(pending_arrivals) else float("inf")
        )
        next_event = events[0][0] if events else float("inf")
        now = min(next_arrival, next_event)
        usage_integral += running_cpu * (now - last_time)
        last_time = now
        batch = []
        while arrival_index < len(pending_arrivals) and pending_arrivals[arrival_index].submit_time == now:
            batch.append(pending_arrivals[arrival_index])
            arrival_index += 1
        workloads = [workload_of(job) for job in batch]  # building objects is the client's cost, not the engine's
        started = timed_start()
        for job, workload in zip(batch, workloads, strict=True):
            key = engine.submit(workload, now)
            workloads_by_key[key] = str(job.priority_class)
            created[key] = now
        while events and events[0][0] == now:
            _, _, _, key, admission = heapq.heappop(events)
            if admitted_serial.get(key) == admission:  # still the admission that scheduled this finish
                engine.finish(key, now)
                running_cpu -= cpu_of[workloads_by_key[key]]
                del admitted_serial[key]
                time_to_admission[workloads_by_key[key]].append(admitted_time[key] - created[key])
                end_time = now
        result = engine.schedule(now)
        engine_cpu += time.process_time() - started
        decisions += result.decisions
        for preempted in result.preempted:
            if preempted.key in admitted_serial:
                del admitted_serial[preempted.key]
                running_cpu -= cpu_of[workloads_by_key[preempted.key]]
        for admitted in result.admitted:
            serial += 1
            admitted_serial[admitted.key] = serial
            admitted_time[admitted.key] = now
            workload_class = workloads_by_key[admitted.key]
            running_cpu += cpu_of[workload_class]
            heapq.heappush(events, (now + runtime_of[workload_class], serial, "finish", admitted.key, serial))
    total_nominal = perf.cohorts * perf.queues_per_cohort * perf.nominal_cpu
    finished = sum(len(v) for v in time_to_admission.values())
    return {
        "scenario": args.scenario,
        "workloads": len(pending_arrivals),
        "finished": finished,
        "decisions": decisions,
        "engine_cpu_seconds": round(engine_cpu, 3),
        "decisions_per_second": round(decisions / engine_cpu, 1) if engine_cpu else None,
        "avg_time_to_admission_s": {
            name: round(sum(values) / len(values), 3) if values else None for name, values in time_to_admission.items()
        },
        "usage_pct": round(100.0 * usage_integral / (total_nominal * end_time), 2) if end_time else None,
        "virtual_seconds": round(end_time, 3),
        "wall_seconds": round(time.perf_counter() - wall_start, 3),
    }
