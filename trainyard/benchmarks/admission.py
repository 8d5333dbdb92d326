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

from trainyard.benchmarks.kueue_scenarios import SCENARIOS, Arrival, arrivals, queue_objects


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="kueue-baseline")
    parser.add_argument(
        "--one-per-cycle", action="store_true", help="admit one head per ClusterQueue per cycle, as Kueue does"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    from scheduler.engine import AdmissionEngine, EngineConfig

    scenario = SCENARIOS[args.scenario]
    wall_start = time.perf_counter()
    engine = AdmissionEngine(EngineConfig(multiple_admissions_per_cycle=not args.one_per_cycle))
    engine_cpu = 0.0

    def timed_start() -> float:
        return time.process_time()

    started = timed_start()
    for obj in queue_objects(scenario):
        engine.apply(obj)
    engine_cpu += time.process_time() - started

    pending_arrivals = arrivals(scenario)
    workloads_by_key: dict[str, Arrival] = {}
    # events: (time, order, kind, key, admission serial) — arrivals before finishes at one instant
    events: list[tuple[float, int, str, str, int]] = []
    serial = 0
    admitted_serial: dict[str, int] = {}
    admitted_time: dict[str, float] = {}
    created: dict[str, float] = {}
    time_to_admission: dict[str, list[float]] = {c.name: [] for c in scenario.classes}
    usage_integral = 0.0  # cpu-seconds
    running_cpu = 0
    last_time = 0.0
    decisions = 0
    arrival_index = 0
    end_time = 0.0

    while arrival_index < len(pending_arrivals) or events:
        next_arrival = pending_arrivals[arrival_index].time if arrival_index < len(pending_arrivals) else float("inf")
        next_event = events[0][0] if events else float("inf")
        now = min(next_arrival, next_event)
        usage_integral += running_cpu * (now - last_time)
        last_time = now
        batch = []
        while arrival_index < len(pending_arrivals) and pending_arrivals[arrival_index].time == now:
            batch.append(pending_arrivals[arrival_index])
            arrival_index += 1
        workloads = [a.workload() for a in batch]  # building objects is the client's cost, not the engine's
        started = timed_start()
        for arrival, workload in zip(batch, workloads, strict=True):
            key = engine.submit(workload, now)
            workloads_by_key[key] = arrival
            created[key] = now
        while events and events[0][0] == now:
            _, _, _, key, admission = heapq.heappop(events)
            if admitted_serial.get(key) == admission:  # still the admission that scheduled this finish
                engine.finish(key, now)
                running_cpu -= workloads_by_key[key].workload_class.cpu
                del admitted_serial[key]
                cls = workloads_by_key[key].workload_class.name
                time_to_admission[cls].append(admitted_time[key] - created[key])
                end_time = now
        result = engine.schedule(now)
        engine_cpu += time.process_time() - started
        decisions += result.decisions
        for preempted in result.preempted:
            if preempted.key in admitted_serial:
                del admitted_serial[preempted.key]
                running_cpu -= workloads_by_key[preempted.key].workload_class.cpu
        for admitted in result.admitted:
            serial += 1
            admitted_serial[admitted.key] = serial
            admitted_time[admitted.key] = now
            arrival = workloads_by_key[admitted.key]
            running_cpu += arrival.workload_class.cpu
            heapq.heappush(events, (now + arrival.workload_class.runtime_s, serial, "finish", admitted.key, serial))
    total_nominal = scenario.cohorts * scenario.queues_per_cohort * scenario.nominal_cpu
    finished = sum(len(v) for v in time_to_admission.values())
    return {
        "scenario": scenario.name,
        "workloads": scenario.workloads,
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
