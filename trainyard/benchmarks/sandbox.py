"""`trainyard bench sandbox`: a scenario through the whole service, against the embedded simulator.

``--jobs`` TrainJobs (Kalos mix, contended) on ``--nodes`` simulated 8-GPU nodes (blocks of 20
nodes, 10 blocks a spine) go through a ``Sandbox`` (API server on loopback HTTPS, trainyard's
webhook, controllers and the stand-ins), in lockstep virtual time (``trainyard simulate --backend sandbox``), and
through the embedded simulator. Prints how long the sandbox run took, how many API requests it
served and the share of jobs whose decisions agree (100% expected in lockstep; ``--speedup N``
paces the run on a sped-up wall clock instead, where arrivals can share a cycle).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

NODES_PER_BLOCK = 20
BLOCKS_PER_SPINE = 10


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=int, default=1000, help="TrainJobs (default 1000)")
    parser.add_argument("--nodes", type=int, default=1000, help="simulated nodes, a multiple of 20 (default 1000)")
    parser.add_argument("--load", type=float, default=1.5, help="offered GPU-time / capacity (default 1.5)")
    parser.add_argument("--seed", type=int, default=1, help="seed (default 1)")
    parser.add_argument(
        "--speedup",
        type=float,
        default=None,
        metavar="N",
        help="pace on a wall clock N times faster (default: lockstep)",
    )


def scenario(jobs: int, nodes: int, load: float) -> Any:
    from simulations.cluster_spec import ClusterSpec
    from simulations.scenarios import Scenario
    from simulations.workloads import SyntheticWorkload

    blocks = nodes // NODES_PER_BLOCK
    spines = max(1, blocks // BLOCKS_PER_SPINE)
    return Scenario(
        name=f"sandbox-{jobs}-jobs-{nodes}-nodes",
        description=f"{nodes} nodes × 8 GPUs, 4 teams, {jobs} TrainJobs (Kalos mix, load {load:g})",
        cluster=ClusterSpec(
            zones=1, spines_per_zone=spines, blocks_per_spine=blocks // spines, nodes_per_block=NODES_PER_BLOCK
        ),
        workload=SyntheticWorkload(jobs=jobs, mix="kalos", load=load, max_duration=86400.0),
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    from sandbox.compare.comparison import comparable
    from simulations.scenarios import build
    from trainyard.benchmarks.calibration import calibration_seconds
    from trainyard.cli.simulate.sandbox_backend import compare_backends

    if args.jobs < 1 or args.nodes < NODES_PER_BLOCK or args.nodes % NODES_PER_BLOCK:
        raise SystemExit(f"--jobs must be at least 1 and --nodes a positive multiple of {NODES_PER_BLOCK}")
    blocks = args.nodes // NODES_PER_BLOCK
    if blocks > BLOCKS_PER_SPINE and blocks % BLOCKS_PER_SPINE:
        raise SystemExit(f"--nodes above {NODES_PER_BLOCK * BLOCKS_PER_SPINE} must be a multiple of that")
    if args.speedup is not None and args.speedup <= 0:
        raise SystemExit("--speedup must be above 0")
    calibration = calibration_seconds()
    built = build(comparable(scenario(args.jobs, args.nodes, args.load)))
    started = time.perf_counter()
    report = compare_backends(built, args.seed, speedup=args.speedup)
    comparison = report["comparison"]
    return {
        "jobs": args.jobs,
        "nodes": len(built.nodes),
        "wall_seconds": report["sandbox"]["wall_seconds"],
        "api_requests": report["sandbox"]["api_requests"],
        "decisions_equal_pct": comparison["decisions_equal_pct"],
        "calibration_s": calibration,
        "clock": report["clock"],
        "admissions": comparison["admissions"],
        "admission_order_equal_pct": comparison["admission_order_equal_pct"],
        "admission_cycles": {"simulator": report["simulator"]["cycles"], "sandbox": report["sandbox"]["cycles"]},
        "simulator_wall_seconds": report["simulator"]["wall_seconds"],
        "total_wall_seconds": round(time.perf_counter() - started, 2),
        "first_difference": comparison["first_difference"],
    }
