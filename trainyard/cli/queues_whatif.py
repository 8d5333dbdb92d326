"""`trainyard queues what-if CHANGE...`: rehearse changes on the current queues, compare per queue.

The queues (``--objects``/``--kubeconfig``, or a built-in ``--scenario``) are simulated on one
seed without the changes and with each one (or all ``--together``), the variants in parallel
processes; the table lists per ClusterQueue the wait p50/p95, completion p50, utilization of
nominal quota, mean borrowing and preemptions, base -> variant.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from trainyard.cli.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "changes",
        nargs="+",
        metavar="CHANGE",
        help="quota:CQ:FLAVOR:RESOURCE=Q[:borrowing=Q][:lending=Q] | rate:CQ=FACTOR | add-nodes:FLAVOR=N | "
        "remove-nodes:FLAVOR=N | remove-flavor:FLAVOR | apply:FILE",
    )
    parser.add_argument("--scenario", help="a built-in simulation scenario instead of --objects/--kubeconfig")
    parser.add_argument("--trace", type=Path, help="arrivals from a job CSV (teams = ClusterQueue names)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=float, default=24 * 3600.0, help="seconds of recent arrivals replayed")
    parser.add_argument("--duration", type=float, default=3600.0, help="seconds a workload runs when it does not say")
    parser.add_argument("--together", action="store_true", help="one variant with every change, not one per change")
    parser.add_argument("--processes", type=int, help="parallel simulations (default: the machine's cores)")
    parser.add_argument("--out", type=Path, help="write plots of every variant here")


def rehearse(args: argparse.Namespace) -> dict[str, Any]:
    from simulations.errors import SimulationInputError
    from simulations.whatif import Rehearsal, apply_changes, compare, parse_change, rehearsal_from_queues, run_variants

    try:
        changes = [(text, parse_change(text)) for text in args.changes]
        if args.scenario is not None:
            from simulations.scenarios import BUILTIN, build

            if args.scenario not in BUILTIN:
                raise UserError(f"unknown scenario {args.scenario!r}; built-in: {', '.join(BUILTIN)}")
            base = Rehearsal(build(BUILTIN[args.scenario]))
        else:
            from trainyard.cli.queues_source import load_source

            loaded = load_source(args)
            base = rehearsal_from_queues(
                [*loaded.objects],
                loaded.workloads,
                loaded.namespaces,
                now=time.time(),
                default_duration=args.duration,
                window=0.0 if args.trace is not None else args.window,
            )
        if args.trace is not None:
            from simulations.traces.jobcsv import read_job_csv

            trace = read_job_csv(args.trace)
            current = [j for j in base.built.jobs(_streams(args.seed)) if j.submit_time <= 0]
            jobs = current + trace
            base = dataclasses.replace(
                base, built=dataclasses.replace(base.built, jobs=lambda _: iter(jobs), job_count=len(jobs))
            )
        variants = {"base": base}
        if args.together:
            variants[" + ".join(t for t, _ in changes)] = apply_changes(base, [c for _, c in changes], args.seed)
        else:
            for text, change in changes:
                variants[text] = apply_changes(base, [change], args.seed)
        started = time.perf_counter()
        results = run_variants(variants, args.seed, processes=args.processes)
        wall = time.perf_counter() - started
    except SimulationInputError as error:
        raise UserError(str(error)) from None
    if args.out is not None:
        from simulations.report import write_plots

        for index, name in enumerate(variants):
            write_plots(results[name].result, args.out / ("base" if index == 0 else f"variant-{index}"))
    return {
        "seed": args.seed,
        "wall_seconds": round(wall, 3),
        "notes": base.notes,
        "variants": {
            name: {"per_queue": compare(results["base"], results[name])} for name in variants if name != "base"
        },
        "base": results["base"].per_queue,
    }


def _streams(seed: int) -> Any:
    from simulations.events import RandomStreams

    return RandomStreams(seed)


def _cell(entry: dict[str, Any]) -> str:
    def show(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
        return str(value)

    return f"{show(entry['base'])}→{show(entry['variant'])}"


def run(args: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table

    from trainyard.cli.queues_render import console, dump

    report = rehearse(args)
    if args.output != "table":
        dump(report, args.output)
        return 0
    out = console()
    for name, variant in report["variants"].items():
        table = Table(
            title=f"what if {name} (seed {report['seed']}; base→variant)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        for column in ("ClusterQueue", "Wait p50 s", "Wait p95 s", "Done p50 s", "Util", "Borrow", "Preempt"):
            table.add_column(column, overflow="fold")
        for queue, row in variant["per_queue"].items():
            table.add_row(
                queue,
                _cell(row["wait_p50_s"]),
                _cell(row["wait_p95_s"]),
                _cell(row["completion_p50_s"]),
                _cell(row["utilization"]),
                _cell(row["borrowing_mean"]),
                _cell(row["preemptions"]),
            )
        out.print(table)
    for note_text in report["notes"]:
        out.print(f"[dim]note: {note_text}[/]")
    if args.out is not None:
        out.print(f"plots written under {args.out}")
    return 0
