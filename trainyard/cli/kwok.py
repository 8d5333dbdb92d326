"""`trainyard kwok export`: write a scenario as the objects a real KWOK cluster runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainyard.cli.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="kwok_action", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="write Nodes, Stages, Kueue objects and jobs for a KWOK cluster")
    export.add_argument("--scenario", default="gpu-1k", help="built-in scenario name or scenario YAML file")
    export.add_argument("--trace", type=Path, help="replay this trace (job CSV or openb directory) instead")
    export.add_argument("--seed", type=int, default=1, help="seed of the synthetic workload (default 1)")
    export.add_argument("--out", type=Path, required=True, help="directory to write")
    export.add_argument(
        "--speedup",
        type=float,
        default=1.0,
        metavar="N",
        help="submit times and durations N times faster than the scenario's (default 1)",
    )


def run(args: argparse.Namespace) -> int:
    from simulations.errors import SimulationInputError
    from simulations.kwok.export import export
    from simulations.scenarios import build, resolve_scenario, with_trace

    if args.speedup <= 0:
        raise UserError(f"--speedup: must be greater than 0, got {args.speedup:g}")
    try:
        scenario = resolve_scenario(args.scenario)
        if args.trace is not None:
            scenario = with_trace(scenario, args.trace)
        counts = export(build(scenario), args.out, args.seed, args.speedup)
    except SimulationInputError as error:
        raise UserError(str(error)) from None
    for name, count in counts.items():
        print(f"{args.out / name}: {count} objects")
    return 0
