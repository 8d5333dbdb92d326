"""Reports of a run: a rich table for the terminal, JSON, and PNG plots (matplotlib, Agg)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from simulations.result import SimulationResult

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
    return [
        (
            "jobs submitted / finished / never ran",
            f"{jobs['submitted']:,} / {jobs['finished']:,} / {jobs.get('never_ran', 0):,}",
        ),
        (f"{data['unit']} allocated (mean fraction)", _fmt(data["allocation"]["mean_fraction"])),
        ("queue wait p50 / p95 / p99 (s)", " / ".join(_fmt(waits[k]) for k in ("p50", "p95", "p99"))),
        ("completion time p50 / p95 / p99 (s)", " / ".join(_fmt(completion[k]) for k in ("p50", "p95", "p99"))),
        ("fragmentation (free share unusable)", _fmt(data["fragmentation"]["mean_fraction_of_free"])),
        ("preemptions / evictions", f"{data['preemptions']['total']} / {data['evictions']['total']}"),
        ("placement at t* (fraction)", _fmt(placement["optimal_fraction"])),
        ("invariants", "held" if invariants["violations"] == 0 else f"{invariants['violations']} VIOLATED"),
        ("events / engine cycles", f"{data['events']:,} / {data['cycles']:,}"),
        ("wall seconds (engine)", f"{data['wall_seconds']:.2f} ({data['engine_seconds']:.2f})"),
        ("virtual seconds", _fmt(data["virtual_seconds"])),
    ]


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
        per_queue = Table(title=f"{result.scenario}: per ClusterQueue")
        for column in (
            "ClusterQueue",
            "wait p50",
            "wait p95",
            "wait p99",
            "share of use",
            "nominal share",
            "borrowed (mean)",
        ):
            per_queue.add_column(column, justify="right" if column != "ClusterQueue" else "left")
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


def write_plots(result: SimulationResult, out: Path) -> list[Path]:
    """allocation.png, queue_length.png, wait_cdf.png and placement_tiers.png in ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    times = [s.time / 3600.0 for s in result.samples]
    unit = result.summary["unit"]

    figure, axis = plt.subplots(figsize=(8, 4))
    axis.plot(times, [s.allocated for s in result.samples], label=f"{unit} allocated")
    axis.axhline(result.summary["capacity"], color="grey", linestyle="--", label="capacity")
    axis.set_xlabel("virtual time (h)")
    axis.set_ylabel(unit)
    axis.set_title(f"{result.scenario}: allocation over time")
    axis.legend()
    figure.tight_layout()
    written.append(out / "allocation.png")
    figure.savefig(written[-1], dpi=100)
    plt.close(figure)

    figure, axis = plt.subplots(figsize=(8, 4))
    queues = sorted({q for s in result.samples for q in s.pending})
    if len(queues) <= 12:
        for queue in queues:
            axis.plot(times, [s.pending.get(queue, 0) for s in result.samples], label=queue)
        if queues:
            axis.legend(fontsize="small")
    else:
        axis.plot(times, [sum(s.pending.values()) for s in result.samples], label="all queues")
        axis.legend()
    axis.set_xlabel("virtual time (h)")
    axis.set_ylabel("pending workloads")
    axis.set_title(f"{result.scenario}: queue length over time")
    figure.tight_layout()
    written.append(out / "queue_length.png")
    figure.savefig(written[-1], dpi=100)
    plt.close(figure)

    figure, axis = plt.subplots(figsize=(8, 4))
    wait_times = result.wait_times
    shown = sorted(wait_times)[:12]
    for queue in shown:
        values = sorted(wait_times[queue])
        if values:
            axis.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post", label=queue)
    axis.set_xscale("symlog")
    axis.set_xlabel("queue wait (s)")
    axis.set_ylabel("fraction of jobs")
    axis.set_title(f"{result.scenario}: wait-time CDF per ClusterQueue")
    if shown:
        axis.legend(fontsize="small")
    figure.tight_layout()
    written.append(out / "wait_cdf.png")
    figure.savefig(written[-1], dpi=100)
    plt.close(figure)

    figure, axis = plt.subplots(figsize=(8, 4))
    tiers = result.summary["placement"]["tiers"]
    gaps = result.summary["placement"]["gap_vs_t_star"]
    labels = [label.rsplit("/", 1)[-1] for label in tiers]
    axis.bar(labels, list(tiers.values()), color="tab:blue", label="placements per tier")
    axis.set_ylabel("gangs")
    title = "placement tier (lowest level holding the whole gang)"
    if gaps:
        title += "; levels above t*: " + ", ".join(f"{k}: {v}" for k, v in gaps.items())
    axis.set_title(title, fontsize="small")
    figure.tight_layout()
    written.append(out / "placement_tiers.png")
    figure.savefig(written[-1], dpi=100)
    plt.close(figure)
    return written
