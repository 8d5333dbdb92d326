"""`trainyard simulate`: run a scenario or a trace through the real engine over virtual time."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from simulations.result import SimulationResult
    from simulations.scenarios import Scenario


# what `--trace` given without a value stands for (resolved in run: the CLI imports stay cheap);
# a Path, since argparse would pass a string const through ``type``
BUNDLED_TRACE = Path("<the bundled openb trace>")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        default="gpu-1k",
        help="built-in scenario (gpu-1k, gpu-10k: steady state; gpu-1k-burst, gpu-10k-burst; kueue-baseline, "
        "kueue-large) or a scenario YAML file (default: gpu-1k)",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        nargs="?",
        const=BUNDLED_TRACE,
        metavar="FILE|DIR",
        help="replay a trace instead of the scenario's workload: a job CSV (on the scenario's cluster) "
        "or the openb directory (on its own 1,213 nodes); --trace alone: the openb trace shipped in "
        "simulations/data/alibaba-openb-2023",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed for every random stream (default 1)")
    parser.add_argument("--out", type=Path, help="write summary.json and PNG plots into this directory")
    _configure_comparisons(parser)
    parser.add_argument(
        "--mode",
        choices=("timeline", "saturation"),
        default="timeline",
        help="timeline (default): arrivals and departures over virtual time; saturation: the openb trace "
        "(--trace DIR, default the bundled one), pods in creation order that never leave, until and past "
        "the first refusal (FGD, ATC'23)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of tables")
    _configure_backends(parser)


def _configure_backends(parser: argparse.ArgumentParser) -> None:
    """Where the scenario runs: the simulator, a KWOK cluster, or the sandbox (embedded or real)."""
    parser.add_argument(
        "--backend",
        choices=("sim", "kwok", "sandbox"),
        default="sim",
        help="sim (default), a real KWOK cluster, or sandbox: the whole service on a local API server, "
        "beside the simulator (--speedup N: a sped-up wall clock instead of lockstep virtual time)",
    )
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig of the KWOK cluster (--backend kwok)")
    parser.add_argument(
        "--controllers",
        choices=("kueue", "trainyard"),
        default="kueue",
        help="--backend kwok: who admits and launches the TrainJobs: Kueue installed on the cluster (default) "
        "or trainyard's own controllers, run by this command against --kubeconfig (no Kueue needed)",
    )
    parser.add_argument(
        "--speedup",
        type=float,
        default=1.0,
        metavar="N",
        help="--backend kwok: submit times and durations N times faster than the scenario's (default 1)",
    )
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="--backend kwok: seconds to wait for the jobs (default 3600)"
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="--backend sandbox: on real Kubernetes components (make cluster-tools) instead of the embedded "
        "API server; metrics beside the simulator's (wall clock, --speedup N)",
    )
    parser.add_argument(
        "--binaries", type=Path, metavar="DIR", help="--backend sandbox --real: where the component binaries are"
    )


def _configure_comparisons(parser: argparse.ArgumentParser) -> None:
    """Runs side by side (scenarios, placement policies) and the saturation replay's GPU sharing."""
    parser.add_argument(
        "--compare",
        nargs="+",
        metavar="SCENARIO",
        help="run several scenarios (names or files: other policies or quotas) on the same seed, side by side; "
        "with --mode saturation: placement policies (those of --compare-policies; default all)",
    )
    parser.add_argument(
        "--compare-policies",
        nargs="+",
        metavar="POLICY",
        help="run the scenario once per placement policy (trainyard, first-fit, best-fit, dot-product, "
        "kueue-bestfit, kueue-leastfree, fgd, random) on the same seed: mean GPU allocation and p95 waits "
        "(team-a's, the largest gangs') side by side",
    )
    parser.add_argument(
        "--gpu-sharing",
        action="store_true",
        help="--mode saturation: place fractional GPUs (openb gpu_milli) as GPU sharing does, several pods on "
        "one GPU up to 1000 thousandths, as the FGD paper does (default: each rounded up to a whole GPU)",
    )


def run(args: argparse.Namespace) -> int:
    from simulations.errors import SimulationInputError

    if args.trace == BUNDLED_TRACE or (args.trace is None and args.mode == "saturation"):
        from simulations.traces.openb import BUNDLED_OPENB_DIR

        args.trace = BUNDLED_OPENB_DIR

    if args.backend == "sandbox" and args.real:
        from trainyard.cli.simulate import real_cluster

        return real_cluster.run(args)
    if args.real or args.binaries is not None:
        raise UserError("--real and --binaries apply to --backend sandbox")
    if args.backend == "sandbox":
        from trainyard.cli.simulate import sandbox_backend

        return sandbox_backend.run(args)
    if args.backend == "kwok" and args.controllers == "trainyard":
        from trainyard.cli.simulate import sandbox_backend

        return sandbox_backend.run_kwok(args)
    if args.gpu_sharing and args.mode != "saturation":
        raise UserError("--gpu-sharing applies to --mode saturation (the openb replay)")
    try:
        if args.mode == "saturation":
            from trainyard.cli.simulate import saturation_mode

            return saturation_mode.run(args)
        if args.compare_policies:
            from trainyard.cli.simulate import policies

            return policies.run(args)
        return _run(args)
    except SimulationInputError as error:
        raise UserError(str(error)) from None


def _run(args: argparse.Namespace) -> int:
    from simulations.scenarios import resolve_scenario, with_trace

    names = args.compare or [args.scenario]
    scenarios = [resolve_scenario(name) for name in names]
    if args.trace is not None:
        scenarios = [with_trace(s, args.trace) for s in scenarios]
    if args.compare and len({s.name for s in scenarios}) != len(scenarios):
        scenarios = [dataclasses.replace(s, name=f"{s.name}#{i + 1}") for i, s in enumerate(scenarios)]

    if args.speedup <= 0:
        raise UserError(f"--speedup: must be greater than 0, got {args.speedup:g}")
    if args.backend != "kwok" and args.speedup != 1.0:
        raise UserError("--speedup applies to --backend kwok and sandbox (a simulation runs in virtual time already)")
    if args.backend == "kwok":
        return _run_on_kwok(args, scenarios[0])
    results = [_simulate(args, scenario) for scenario in scenarios]
    _report(args, results)
    return 0 if all(r.invariants_held for r in results) else 1


def _run_on_kwok(args: argparse.Namespace, scenario: Scenario) -> int:
    if args.kubeconfig is None:
        raise UserError("--backend kwok needs --kubeconfig PATH (the KWOK cluster's kubeconfig)")
    from aiohttp import ClientError

    from scheduler.kube.errors import KubeApiError, KubeConfigError
    from simulations.kwok.cluster_run import run_on_kwok
    from simulations.scenarios import build

    try:
        summary = run_on_kwok(
            build(scenario), args.kubeconfig, seed=args.seed, timeout=args.timeout, speedup=args.speedup
        )
    except KubeConfigError as error:
        raise UserError(f"--kubeconfig: {error}") from None
    except (ClientError, OSError, KubeApiError) as error:
        raise UserError(f"--kubeconfig {args.kubeconfig}: cannot reach the KWOK cluster: {error}") from None
    print(json.dumps(summary, indent=2))
    return 0


def _simulate(args: argparse.Namespace, scenario: Scenario) -> SimulationResult:
    """One run, with a progress bar on an interactive terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    from simulations.scenarios import build
    from simulations.simulator import Simulation

    built = build(scenario)
    if args.json or not sys.stderr.isatty():
        return Simulation(built, args.seed).run()
    with Progress(
        TextColumn(f"[bold]{scenario.name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("jobs done · virtual {task.fields[hours]:.1f} h"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task(scenario.name, total=built.job_count, hours=0.0)

        def report(done: int, total: int, now: float, task_id: TaskID = task) -> None:
            progress.update(task_id, completed=done, hours=now / 3600.0)

        return Simulation(built, args.seed, report).run()


def _report(args: argparse.Namespace, results: list[SimulationResult]) -> None:
    from rich.console import Console

    from simulations.report import render_table, write_json, write_plots

    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        write_json(results, args.out / "summary.json")
        for result in results:
            target = args.out if len(results) == 1 else args.out / result.scenario.replace("/", "_").replace(":", "_")
            write_plots(result, target)
    if args.json:
        payload = results[0].to_dict() if len(results) == 1 else [r.to_dict() for r in results]
        print(json.dumps(payload, indent=2))
    else:
        render_table(results, Console())
        if args.out is not None:
            Console().print(f"wrote {args.out}/summary.json and plots")
