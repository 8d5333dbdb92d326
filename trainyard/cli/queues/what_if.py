"""`trainyard queues what-if CHANGE...`: rehearse changes on the current queues, compare per queue.

The queues (``--objects``/``--kubeconfig``, or a built-in ``--scenario``) are simulated on one
seed without the changes and with each one (or all ``--together``), the variants in parallel
processes; the table lists per ClusterQueue the wait p50/p95, completion p50, utilization of
nominal quota, mean borrowing and preemptions, base -> variant, over the scenario's measured
window (its warm-up left out, as ``simulate``'s report and the plots written with ``--out``
leave it), and says which window and units. Each change is shown with the value it replaces;
where a change made its own queue's wait worse, the lines under its table say what the runs
show for that queue.
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


def _base(args: argparse.Namespace) -> Any:
    """The rehearsal without changes: a built-in scenario, or the queues read (with a trace's arrivals)."""
    from simulations.whatif import Rehearsal, rehearsal_from_queues

    if args.scenario is not None:
        from simulations.scenarios import BUILTIN, build

        if args.scenario not in BUILTIN:
            raise UserError(f"unknown scenario {args.scenario!r}; built-in: {', '.join(BUILTIN)}")
        base = Rehearsal(build(BUILTIN[args.scenario]))
    else:
        from trainyard.cli.queues.source import load_source

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
    return base


def rehearse(args: argparse.Namespace) -> dict[str, Any]:
    from simulations.errors import SimulationInputError
    from simulations.whatif import apply_changes, parse_change, run_variants

    try:
        changes = [(text, parse_change(text)) for text in args.changes]
        base = _base(args)
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
    return _report(args.seed, wall, base, [text for text, _ in changes], results)


def _report(seed: int, wall: float, base: Any, changes: list[str], results: dict[str, Any]) -> dict[str, Any]:
    """Per variant: its changes in the base's numbers, the per-queue comparison, and why a change
    made its own queue's wait worse (from the runs); the window every figure covers."""
    from simulations.whatif import compare
    from simulations.whatif.outcome import describe_change, why_worse
    from simulations.whatif.runs import measured_window

    unit = str(results["base"].result.summary.get("unit", "GPUs"))
    summaries = {text: describe_change(text, base) for text in changes}
    report: dict[str, Any] = {
        "seed": seed,
        "wall_seconds": round(wall, 3),
        "window": measured_window(results["base"].result),
        "notes": base.notes,
        "variants": {},
        "base": results["base"].per_queue,
    }
    for name in results:
        if name == "base":
            continue
        described = [summaries[text] for text in changes if text in name.split(" + ")]
        found = [why_worse(s, results["base"].per_queue, results[name].per_queue, unit) for s in described]
        report["variants"][name] = {
            "changes": [s.words for s in described],
            "per_queue": compare(results["base"], results[name]),
            "why_worse": [line for lines in found if lines for line in lines] or None,
        }
    return report


def _streams(seed: int) -> Any:
    from simulations.events import RandomStreams

    return RandomStreams(seed)


def _cell(entry: dict[str, Any], *, percent: bool = False) -> str:
    """``base→variant``, short enough to stay on one line at 80 columns: thousands as "k",
    a fraction of nominal as a percentage."""

    def show(value: Any) -> str:
        if value is None:
            return "-"
        if percent:
            return f"{value * 100:.0f}%"
        if isinstance(value, int | float) and abs(value) >= 1000:
            return f"{value / 1000:.1f}k"
        if isinstance(value, float):
            return f"{value:.0f}" if abs(value) >= 10 else f"{value:.2g}"
        return str(value)

    return f"{show(entry['base'])}→{show(entry['variant'])}"


def _window_words(window: dict[str, Any]) -> str:
    """Which window the figures cover, and their units, in one caption."""
    span = f"{window['from_s'] / 3600:.1f}–{window['to_s'] / 3600:.1f} h"
    left_out = window["warmup_jobs_left_out"]
    warmup = f", warm-up left out ({left_out:,} jobs)" if window["from_s"] else ""
    return (
        f"jobs submitted {span}{warmup}; Util %nom: {window['utilization']}; Borrow: {window['borrowing']}; "
        "Preempt: preemptions those jobs suffered"
    )


def run(args: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table

    from trainyard.cli.queues.output import console, dump

    report = rehearse(args)
    if args.output != "table":
        dump(report, args.output)
        return 0
    out = console()
    window = report["window"]
    for name, variant in report["variants"].items():
        table = Table(
            title=f"what if {name}: {'; '.join(variant['changes'])} (seed {report['seed']}; base→variant)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=True,
            caption=_window_words(window),
            caption_justify="left",
        )
        table.add_column("ClusterQueue", overflow="fold")
        for column in ("Wait p50 s", "Wait p95 s", "Done p50 s", "Util %nom", "Borrow", "Preempt"):
            table.add_column(column, justify="right", no_wrap=True)
        for queue, row in variant["per_queue"].items():
            table.add_row(
                queue,
                _cell(row["wait_p50_s"]),
                _cell(row["wait_p95_s"]),
                _cell(row["completion_p50_s"]),
                _cell(row["utilization"], percent=True),
                _cell(row["borrowing_mean"]),
                _cell(row["preemptions"]),
            )
        out.print(table)
        for line in variant["why_worse"] or []:
            out.print(f"  {line}")
    for note_text in report["notes"]:
        out.print(f"[dim]note: {note_text}[/]")
    if args.out is not None:
        out.print(f"plots written under {args.out}")
    return 0
