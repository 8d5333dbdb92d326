"""`trainyard bench simulation`: 100,000 TrainJobs on 10,000 nodes × 8 GPUs through the engine.

Prints ``{"jobs", "nodes", "events", "wall_seconds", "events_per_second", "peak_rss_mb"}`` plus
where the time went (engine calls vs. the simulator's own work), whether every invariant held, the
decision hash and whether the engine ran compiled. ``cpu_seconds`` is this process's CPU time over
the same span: on a machine shared with other work, wall time also counts the time spent waiting
for a core, CPU time does not (the calibration is CPU time too). The run's observers (invariant
checks, t*, fragmentation) run in a second process on this size of run (``observers``);
``observer_cpu_seconds`` is that process's CPU time, which wall time overlaps.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import time
from typing import Any

from trainyard.native.activation import engine_build


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=int, default=100_000, help="TrainJobs to simulate (default 100,000)")
    parser.add_argument("--seed", type=int, default=1)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from simulations.observers import ObserverProcess
    from simulations.scenarios import BENCH_SCENARIO, build
    from simulations.simulator import Simulation
    from trainyard.benchmarks.decision_hash import decision_hash

    started = time.perf_counter()
    cpu_started = time.process_time()
    children_started = _children_cpu()
    scenario = BENCH_SCENARIO
    assert scenario.workload is not None
    scenario = dataclasses.replace(scenario, workload=dataclasses.replace(scenario.workload, jobs=args.jobs))
    built = build(scenario)
    simulation = Simulation(built, args.seed)
    result = simulation.run()
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    observer_cpu = _children_cpu() - children_started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "jobs": args.jobs,
        "nodes": len(built.nodes),
        "events": result.events,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "observers": "second process" if isinstance(simulation.observers, ObserverProcess) else "this process",
        "observer_cpu_seconds": round(observer_cpu, 3),
        "events_per_second": round(result.events / wall, 1) if wall else None,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "engine_seconds": round(result.engine_seconds, 3),
        "engine_cycles": result.cycles,
        "jobs_finished": result.summary["jobs"]["finished"],
        "invariant_violations": result.invariants["violations"],
        "decision_hash": decision_hash(result),
        "engine_build": engine_build(),
    }


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the observer process, once joined)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
