"""Reports of a run: a rich table for the terminal, JSON, and PNG plots (matplotlib, Agg)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from simulations.plots import write_plots
from simulations.result import SimulationResult

__all__ = ["never_ran_table", "render_table", "summary_rows", "unfinished_table", "write_json", "write_plots"]

NEVER_RAN_ROWS = 10  # the printed table's cap; the JSON lists every job


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def summary_rows(result: SimulationResult) -> list[tuple[str, str]]:
    data = result.to_dict()
    jobs = data["jobs"]
    waits = data["queue_wait_seconds_all"]
    completion = data["completion_seconds"]
    placement = data["placement"]
    invariants = data["invariants"]
    window = data.get("window")
    rows = [
        (
            "jobs submitted / finished / never ran",
            f"{jobs['submitted']:,} / {jobs['finished']:,} / {jobs.get('never_ran', 0):,}",
        ),
        (f"{data['unit']} allocated (mean fraction)", _fmt(data["allocation"]["mean_fraction"])),
        ("queue wait p50 / p95 / p99 (s)", " / ".join(_fmt(waits[k]) for k in ("p50", "p95", "p99"))),
        ("completion time p50 / p95 / p99 (s)", " / ".join(_fmt(completion[k]) for k in ("p50", "p95", "p99"))),
        (
            "free GPUs the smallest waiting job cannot use (mean share)",
            _fmt(data["fragmentation"]["mean_fraction_of_free"]),
        ),
        ("preemptions / evictions", f"{data['preemptions']['total']} / {data['evictions']['total']}"),
        ("placements at the best level free (t*)", _fmt(placement["optimal_fraction"])),
        ("invariants", "held" if invariants["violations"] == 0 else f"{invariants['violations']} VIOLATED"),
        ("events / engine cycles", f"{data['events']:,} / {data['cycles']:,}"),
        ("wall seconds (engine)", f"{data['wall_seconds']:.2f} ({data['engine_seconds']:.2f})"),
        ("virtual seconds", _fmt(data["virtual_seconds"])),
    ]
    notes = data.get("notes") or {}
    if "censored_pods" in notes and jobs["submitted"]:
        total = jobs["submitted"]

        def share(key: str) -> str:
            return f"{notes.get(key, 0):,} ({notes.get(key, 0) / total:.0%})"

        # gone + censored is every pod; never scheduled pods are Pending at the snapshot (censored)
        # in openb, or Failed before scheduling: a count across both
        rows.insert(
            0,
            (
                "trace pods already gone / censored; never scheduled (of either)",
                f"{share('already_gone_pods')} / {share('censored_pods')}; {share('never_scheduled_pods')}",
            ),
        )
    if window:
        rows.insert(
            0,
            (
                "measured window (warm-up left out)",
                f"{window['warmup_seconds'] / 3600:g} h - {data['virtual_seconds'] / 3600:g} h "
                f"({window['jobs_submitted_in_warmup']:,} warm-up jobs not in waits)",
            ),
        )
    return rows


def render_table(results: Sequence[SimulationResult], console: Console) -> None:
    """One column per run: several runs (``--compare``) sit side by side."""
    table = Table(title="trainyard simulate", show_lines=False)
    table.add_column("metric")
    for result in results:
        table.add_column(result.scenario, justify="right")
    rows = [summary_rows(r) for r in results]
    for i, (label, _) in enumerate(rows[0]):
        table.add_row(label, *(r[i][1] for r in rows))
    console.print(table)
    for result in results:
        queues = result.summary["queue_wait_seconds"]
        if len(queues) > 12:
            continue
        unit = result.summary["unit"]
        per_queue = Table(
            title=f"{result.scenario}: per ClusterQueue (waits in s; use and quota: shares of the total; "
            f"borrowed: mean {unit} above quota)"
        )
        per_queue.add_column("ClusterQueue", no_wrap=True)
        for column in ("wait p50", "wait p95", "wait p99", "use", "quota", "borrowed"):
            per_queue.add_column(column, justify="right")
        for queue, waits in queues.items():
            share = result.summary["fair_share"][queue]
            per_queue.add_row(
                queue,
                _fmt(waits["p50"]),
                _fmt(waits["p95"]),
                _fmt(waits["p99"]),
                _fmt(share["share_of_use"]),
                _fmt(share["nominal_share"]),
                _fmt(result.summary["borrowing_mean"].get(queue)),
            )
        console.print(per_queue)
    for result in results:
        if result.never_ran:
            console.print(never_ran_table(result))
        if result.unfinished:
            console.print(unfinished_table(result))


def never_ran_table(result: SimulationResult, limit: int = NEVER_RAN_ROWS) -> Table:
    """The jobs the engine never admitted, with its reason; the first ``limit``, then a count
    (``--json`` lists every one)."""
    jobs = result.never_ran
    never_fits = sum(1 for job in jobs if job["never_fits"])
    table = Table(
        title=f"{result.scenario}: {len(jobs):,} job(s) never ran ({never_fits:,} can never fit)",
        show_lines=False,
    )
    table.add_column("job", no_wrap=True)
    table.add_column("ClusterQueue", no_wrap=True)
    table.add_column("pods x per pod", justify="right", no_wrap=True)
    table.add_column("reason (the engine's)", ratio=1)
    for job in jobs[:limit]:
        table.add_row(
            job["job"],
            job["cluster_queue"],
            f"{job['pods']} x {job['gpus_per_pod']}",
            ("never fits: " if job["never_fits"] else "") + job["reason"],
        )
    if len(jobs) > limit:
        table.add_row(f"... and {len(jobs) - limit:,} more", "", "", "every one is in --json under never_ran")
    return table


def write_json(results: Sequence[SimulationResult], path: Path) -> None:
    payload: Any = results[0].to_dict() if len(results) == 1 else [r.to_dict() for r in results]
    path.write_text(json.dumps(payload, indent=2) + "\n")


def unfinished_table(result: SimulationResult, limit: int = NEVER_RAN_ROWS) -> Table:
    """Jobs admitted at least once that did not finish, with why; counts by state, then the first
    ``limit`` (``--json`` lists every one under unfinished_jobs)."""
    jobs = result.unfinished
    running = sum(1 for job in jobs if job["state"] == "running")
    table = Table(
        title=f"{result.scenario}: {len(jobs):,} job(s) unfinished ({running:,} running at the end, "
        f"{len(jobs) - running:,} preempted or evicted and waiting)",
        show_lines=False,
    )
    table.add_column("job", no_wrap=True)
    table.add_column("ClusterQueue", no_wrap=True)
    table.add_column("reason", ratio=1)
    shown = [j for j in jobs if j["state"] != "running"][:limit]
    shown += [j for j in jobs if j["state"] == "running"][: max(0, limit - len(shown))]
    for job in shown:
        table.add_row(job["job"], job["cluster_queue"], job["reason"])
    if len(jobs) > len(shown):
        table.add_row(f"... and {len(jobs) - len(shown):,} more", "", "every one is in --json under unfinished_jobs")
    return table
