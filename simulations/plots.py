"""PNG plots of a run (matplotlib, Agg): allocation, borrowing and preemptions, queues, waits, tiers.

A steady-state run shades its warm-up on every time axis: the figures in the report leave it out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulations.result import SimulationResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_QUEUES_DRAWN = 12


def _warmup(result: SimulationResult, axis: Axes) -> None:
    window = result.summary.get("window")
    if window:
        axis.axvspan(0, window["warmup_seconds"] / 3600.0, color="grey", alpha=0.15, label="warm-up (not measured)")


def _save(figure: Any, path: Path, written: list[Path]) -> None:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    written.append(path)


def write_series(result: SimulationResult, out: Path) -> Path:
    """series.json in ``out``: what the plots draw, as data (the dashboard draws it in a browser)."""
    samples = result.samples
    queues = sorted({q for s in samples for q in s.pending})
    data = {
        "scenario": result.scenario,
        "seed": result.seed,
        "unit": result.summary.get("unit"),
        "capacity": result.summary.get("capacity"),
        "warmup_hours": (result.summary.get("window") or {}).get("warmup_seconds", 0) / 3600.0,
        "hours": _hours(result),
        "allocated": [s.allocated for s in samples],
        "fragmented": [s.fragmented for s in samples],
        "pending": {queue: [s.pending.get(queue, 0) for s in samples] for queue in queues},
        "wait_seconds": {queue: sorted(waits) for queue, waits in sorted(result.wait_times.items())},
        "placement": result.summary.get("placement"),
    }
    path = out / "series.json"
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return path


def write_plots(result: SimulationResult, out: Path) -> list[Path]:
    """allocation.png, borrowing.png, queue_length.png, wait_cdf.png and placement_tiers.png in
    ``out``, and series.json beside them (``write_series``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    drawings: tuple[tuple[str, Callable[[SimulationResult, Axes], None]], ...] = (
        ("allocation.png", _allocation),
        ("borrowing.png", _borrowing),
        ("queue_length.png", _queue_length),
        ("wait_cdf.png", _wait_cdf),
        ("placement_tiers.png", _tiers),
    )
    for name, draw in drawings:
        figure, axis = plt.subplots(figsize=(8, 4))
        draw(result, axis)
        _save(figure, out / name, written)
    write_series(result, out)
    return written


def _hours(result: SimulationResult) -> list[float]:
    return [s.time / 3600.0 for s in result.samples]


def _allocation(result: SimulationResult, axis: Axes) -> None:
    unit = result.summary["unit"]
    mean = result.summary["allocation"]["mean_fraction"]
    _warmup(result, axis)
    axis.plot(_hours(result), [s.allocated for s in result.samples], label=f"{unit} allocated")
    axis.axhline(result.summary["capacity"], color="grey", linestyle="--", label="capacity")
    axis.set_xlabel("virtual time (h)")
    axis.set_ylabel(unit)
    suffix = f" (measured mean {mean:.2f} of capacity)" if mean is not None else ""
    axis.set_title(f"{result.scenario}: allocation over time{suffix}", fontsize="medium")
    axis.legend(fontsize="small", loc="lower right")


def _borrowing(result: SimulationResult, axis: Axes) -> None:
    """Borrowed amount per queue (above its nominal quota) and preemptions so far, on a second axis."""
    hours = _hours(result)
    queues = sorted({q for s in result.samples for q, amount in s.borrowed.items() if amount})
    _warmup(result, axis)
    if len(queues) <= MAX_QUEUES_DRAWN:
        for queue in queues:
            axis.plot(hours, [s.borrowed.get(queue, 0) for s in result.samples], label=f"{queue} borrowed")
    else:
        axis.plot(hours, [sum(s.borrowed.values()) for s in result.samples], label="all queues borrowed")
    axis.set_xlabel("virtual time (h)")
    axis.set_ylabel(f"{result.summary['unit']} above nominal quota")
    preemptions = axis.twinx()
    preemptions.plot(hours, [s.preempted for s in result.samples], color="black", linestyle=":", label="preemptions")
    preemptions.set_ylabel("preemptions so far (warm-up included)")
    lines, labels = axis.get_legend_handles_labels()
    more_lines, more_labels = preemptions.get_legend_handles_labels()
    # below the axes: inside, it hid the warm-up's borrowing peak
    axis.legend(
        lines + more_lines,
        labels + more_labels,
        fontsize="small",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.15),
        ncol=min(4, len(lines) + 1),
    )
    measured = result.summary["preemptions"]["total"]
    in_all = result.samples[-1].preempted if result.samples else measured
    counts = f"{measured} preemptions measured" + (f", {in_all} with the warm-up" if in_all != measured else "")
    axis.set_title(f"{result.scenario}: borrowing and preemptions ({counts})", fontsize="medium")
    if not queues:
        axis.text(0.5, 0.5, "no queue borrowed", transform=axis.transAxes, ha="center", va="center")


def _queue_length(result: SimulationResult, axis: Axes) -> None:
    hours = _hours(result)
    queues = sorted({q for s in result.samples for q in s.pending})
    _warmup(result, axis)
    if len(queues) <= MAX_QUEUES_DRAWN:
        for queue in queues:
            counts = [s.pending.get(queue, 0) for s in result.samples]
            # a queue that never waited draws on the zero line, under the others: say so
            axis.plot(hours, counts, label=queue if any(counts) else f"{queue} (none pending)")
    else:
        axis.plot(hours, [sum(s.pending.values()) for s in result.samples], label="all queues")
    if queues:
        axis.legend(fontsize="small")
    axis.set_xlabel("virtual time (h)")
    axis.set_ylabel("pending workloads")
    axis.set_title(f"{result.scenario}: queue length over time (workloads waiting for admission)", fontsize="medium")


def _wait_cdf(result: SimulationResult, axis: Axes) -> None:
    wait_times = result.wait_times
    shown = sorted(wait_times)[:MAX_QUEUES_DRAWN]
    for queue in shown:
        values = sorted(wait_times[queue])
        if not values:
            continue
        p95 = result.summary["queue_wait_seconds"].get(queue, {}).get("p95")
        label = f"{queue} ({len(values):,} jobs, " + (
            "none waited)" if values[-1] == 0 else f"p95 {p95:,.0f} s)" if p95 is not None else "waited)"
        )
        axis.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post", label=label)
    axis.set_xscale("symlog")
    axis.set_xlabel("queue wait (s; 0, then log scale)")
    axis.set_ylabel("fraction of jobs admitted within")
    measured = " (jobs submitted after the warm-up)" if result.summary.get("window") else ""
    axis.set_title(f"{result.scenario}: wait-time CDF per ClusterQueue{measured}", fontsize="medium")
    if shown:
        axis.legend(fontsize="small", loc="lower right")


def _tiers(result: SimulationResult, axis: Axes) -> None:
    """How many placements landed at each topology level, and how many matched t*."""
    placement = result.summary["placement"]
    tiers = placement["tiers"]
    gaps = placement["gap_vs_t_star"]
    labels = [label.rsplit("/", 1)[-1] for label in tiers]
    bars = axis.bar(labels, list(tiers.values()), color="tab:blue")
    axis.bar_label(bars, labels=[f"{count:,}" for count in tiers.values()], fontsize="small")
    axis.set_ylabel("placements (warm-up included)")
    axis.set_xlabel("lowest topology level holding every pod of the job (hostname: one node)")
    total = sum(gaps.values())
    if total:
        best = gaps.get("0", 0)
        worse = ", ".join(f"{v:,} {k} level(s) above" for k, v in gaps.items() if k != "0")
        subtitle = f"{best:,} of {total:,} at the lowest level that had room when admitted (t*)" + (
            f"; {worse}" if worse else ""
        )
    else:
        subtitle = "no placements on nodes"
    axis.set_title(f"{result.scenario}: placement tiers\n{subtitle}", fontsize="medium")
