"""`trainyard simulate --scenario NAME --compare-policies P...`: one scenario under several placement policies.

The same scenario, seed and engine run once per policy; only the choice of nodes differs
(``EngineConfig.placement_policy``). Per policy: the mean GPU allocation over the measured
window, team-a's p95 queue wait, the largest gangs' p95 wait (``LARGE_GANG_GPUS`` GPUs and more:
packing that helps small jobs must not starve them), how many of those gangs ran, and the share
of gang placements at the best tier free (t*).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from simulations.metrics import JobRecord
    from simulations.result import SimulationResult

LARGE_GANG_GPUS = 1024
TEAM = "team-a"


def run(args: argparse.Namespace) -> int:
    from simulations.placement_policies import POLICIES

    if args.compare:
        raise UserError("--compare-policies runs one scenario under several policies; leave out --compare")
    if args.backend != "sim":
        raise UserError("--compare-policies runs in the simulator only (--backend sim)")
    unknown = [name for name in args.compare_policies if name not in POLICIES]
    if unknown:
        raise UserError(f"--compare-policies: {unknown[0]!r} is not a placement policy; use {', '.join(POLICIES)}")
    rows = [_run_policy(args, name) for name in args.compare_policies]
    if args.json:
        print(json.dumps({"scenario": args.scenario, "seed": args.seed, "policies": rows}, indent=2))
    else:
        _print_table(args.scenario, rows)
    return 0 if all(row["invariants_held"] for row in rows) else 1


def _run_policy(args: argparse.Namespace, name: str) -> dict[str, Any]:
    from simulations.events import RandomStreams
    from simulations.placement_policies import placement_policy
    from simulations.scenarios import build, resolve_scenario, with_trace
    from simulations.simulator import Simulation

    scenario = resolve_scenario(args.scenario)
    if args.trace is not None:
        scenario = with_trace(scenario, args.trace)
    policy = placement_policy(name, RandomStreams(args.seed).numpy(f"placement-{name}"))
    simulation = Simulation(build(scenario), args.seed, placement_policy=policy)
    result = simulation.run()
    return policy_row(name, result, list(simulation.metrics.jobs.values()), simulation.metrics.warmup)


def policy_row(name: str, result: SimulationResult, jobs: list[JobRecord], warmup: float) -> dict[str, Any]:
    """One policy's figures from its run and its job records."""
    from simulations.metrics import percentiles

    summary = result.summary
    measured = [job for job in jobs if job.submitted >= warmup]
    large = [job for job in measured if job.gpus >= LARGE_GANG_GPUS]
    large_waits = [job.admitted - job.submitted for job in large if job.admitted is not None]
    team = summary["queue_wait_seconds"].get(TEAM, {})
    return {
        "policy": name,
        "mean_allocation": summary["allocation"]["mean_fraction"],
        "team_a_p95_wait_seconds": team.get("p95"),
        "large_gang_p95_wait_seconds": percentiles(large_waits)["p95"],
        "large_gangs": {"submitted": len(large), "admitted": len(large_waits)},
        "all_p95_wait_seconds": summary["queue_wait_seconds_all"]["p95"],
        "placements_at_t_star": summary["placement"]["optimal_fraction"],
        "invariants_held": result.invariants_held,
        "wall_seconds": round(result.wall_seconds, 1),
    }


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} s"


def _print_table(scenario: str, rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{scenario} under each placement policy (same seed, same engine; only the nodes differ)")
    for column in ("policy", "mean alloc.", "team-a p95 wait", f"gangs ≥{LARGE_GANG_GPUS} GPUs p95 wait"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for column in ("large gangs run", "all p95 wait", "at t*"):
        table.add_column(column, justify="right")
    for row in rows:
        large = row["large_gangs"]
        table.add_row(
            row["policy"],
            "-" if row["mean_allocation"] is None else f"{row['mean_allocation']:.1%}",
            _seconds(row["team_a_p95_wait_seconds"]),
            _seconds(row["large_gang_p95_wait_seconds"]),
            f"{large['admitted']}/{large['submitted']}",
            _seconds(row["all_p95_wait_seconds"]),
            "-" if row["placements_at_t_star"] is None else f"{row['placements_at_t_star']:.1%}",
        )
    table.caption = (
        "mean alloc.: GPUs allocated over the measured window (warm-up left out); waits: submission to admission; "
        "large gangs run: admitted / submitted; at t*: gang placements at the lowest tier that had room"
    )
    Console().print(table)
