"""`trainyard simulate --backend sandbox --real`: a scenario on real Kubernetes components, beside the simulator.

A fresh real cluster (``sandbox.real.RealCluster``: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, KWOK and JobSet as processes) takes the scenario as a KWOK cluster would:
``simulations.kwok.cluster_run.run_on_kwok`` creates its Namespaces, Stages, fake Nodes, the
simulated-training runtime and the Kueue objects, submits each TrainJob at its time (wall clock,
``--speedup`` times faster) and reads the Workloads' conditions into the simulator's metrics;
trainyard's controllers admit and launch, real KWOK moves the pods by the Stages. The embedded
simulator runs the same scenario; the two summaries are printed side by side. The wall clock of a
real cluster allows no lockstep, so the comparison is of metrics, not decision by decision
(``--backend sandbox`` without ``--real`` compares decisions).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from trainyard.cli.errors import UserError


def run(args: argparse.Namespace) -> int:
    from sandbox.compare.comparison import comparable, side_by_side
    from sandbox.real.binaries import ClusterTools, MissingComponent
    from sandbox.real.control_plane import RealCluster
    from sandbox.real.processes import ComponentFailed
    from simulations.errors import SimulationInputError
    from simulations.scenarios import build, resolve_scenario, with_trace
    from simulations.simulator import Simulation
    from trainyard.cli.simulate.sandbox_backend import run_kwok_trainyard

    if args.compare:
        raise UserError("--backend sandbox runs one scenario beside the simulator; drop --compare")
    try:
        scenario = resolve_scenario(args.scenario)
        if args.trace is not None:
            scenario = with_trace(scenario, args.trace)
        built = build(comparable(scenario))
        tools = ClusterTools.locate(args.binaries)
    except SimulationInputError as error:
        raise UserError(str(error)) from None
    except MissingComponent as error:
        raise UserError(str(error)) from None
    simulated = Simulation(built, args.seed).run()
    try:
        with RealCluster(tools) as cluster:
            summary = run_kwok_trainyard(
                built, cluster.kubeconfig("admin"), seed=args.seed, timeout=args.timeout, speedup=args.speedup
            )
    except ComponentFailed as error:
        raise UserError(f"the real cluster did not start: {error}") from None
    report: dict[str, Any] = {
        "scenario": built.scenario.name,
        "seed": args.seed,
        "clock": f"wall clock sped up {args.speedup:g}x on real components",
        "metrics": [{"metric": m, "simulator": a, "real": b} for m, a, b in side_by_side(simulated.summary, summary)],
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    return 0


def _print(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{report['scenario']}: the simulator beside real components ({report['clock']})")
    for column in ("metric", "simulator", "real"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in report["metrics"]:
        table.add_row(str(row["metric"]), str(row["simulator"]), str(row["real"]))
    Console().print(table)
