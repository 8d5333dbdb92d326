"""The saturation replay's report: one table (policy per row) and one plot (allocation and
fragmentation rate against arrived demand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from simulations.saturation.paper import paper_rows


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def rate_at(curve: list[list[float]], arrived: float) -> float | None:
    """The fragmentation rate at the first sample where arrived demand reached ``arrived``
    (the last sample when it never did; None without samples)."""
    for share, rate in curve:
        if share >= arrived:
            return rate
    return curve[-1][1] if curve else None


def saturation_table(report: dict[str, Any]) -> Table:
    table = Table(
        title=f"saturation replay of {Path(report['trace']).name}: {report['pods']:,} pods in creation order, "
        f"never leaving, on {report['nodes']:,} nodes / {report['gpus']:,} GPUs "
        f"({report['fractional_gpu_pods']:,} fractional-GPU pods {report['fractional_gpus']})",
    )
    table.add_column("policy", no_wrap=True)
    # short words: the table fits 100 columns; the caption says what each one is
    for column in ("refused at", "GPUs then", "alloc. then", "alloc. at 100%", "alloc. at end", "free GPUs"):
        table.add_column(column, justify="right", min_width=6)
    table.add_column("stranded", justify="right", no_wrap=True)
    table.add_column("frag. at 90%", justify="right")
    table.caption = (
        "refused at: arrived GPU demand (share of the cluster's GPUs) when the first pod was refused; GPUs then: "
        "GPUs allocated then; alloc.: GPUs allocated (share) then, when demand reached 100%, at the end; free GPUs: "
        "unallocated at the end; stranded: free GPUs on nodes no refused GPU pod fits / all free GPUs; frag. at 90%: "
        "fragmentation rate when arrived demand reached 90% (expected fragmented / unallocated GPU capacity, "
        "against the trace's pod shapes); refused pods: below"
    )
    for row in report["policies"]:
        refusal = row["first_refusal"]
        fragmentation = row["fragmentation"]
        rates = row["fragmentation_curve"]
        table.add_row(
            row["policy"],
            "-" if refusal is None else _percent(refusal["arrived_demand_ratio"]),
            "-" if refusal is None else f"{refusal['allocated_gpus']:,.0f}",
            "-" if refusal is None else _percent(refusal["allocation_ratio"]),
            _percent(row["allocation_ratio_at_full_demand"]),
            _percent(row["allocation_ratio"]),
            f"{row['unallocated_gpus']:,.0f}",
            f"{fragmentation['stranded_gpus']:,.0f}/{fragmentation['free_gpus']:,.0f}",
            _percent(rate_at(rates, 0.9)),
        )
    return table


def paper_table(report: dict[str, Any]) -> Table | None:
    """This replay's figures beside the FGD paper's, for the policies both have (sharing mode)."""
    rows = paper_rows(report)
    if not rows:
        return None
    table = Table(title="beside the FGD paper (ATC '23, openb default trace, GPU sharing; its published runs)")
    for column in ("policy", "here: alloc. at end", "paper: alloc. at the same demand", "paper: at 100%", "note"):
        table.add_column(column, justify="left" if column in ("policy", "note") else "right")
    for row in rows:
        table.add_row(
            row["policy"],
            _percent(row["here_at_end"]),
            _percent(row["paper_at_same_demand"]),
            _percent(row["paper_at_full_demand"]),
            row["note"],
        )
    table.caption = rows[0]["why"]
    return table


def write_saturation_plot(report: dict[str, Any], path: Path) -> Path:
    """GPU allocation ratio and fragmentation rate against arrived GPU demand per policy, first refusals marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, (whole, zoom, rate) = plt.subplots(1, 3, figsize=(18, 5.5), gridspec_kw={"width_ratios": [1, 1.2, 1]})
    styles = ("-", "--", "-.", ":")
    for n, row in enumerate(report["policies"]):
        arrived = [100 * a for a, _ in row["curve"]]
        allocated = [100 * b for _, b in row["curve"]]
        refusal = row["first_refusal"]
        reached = "never refused" if refusal is None else f"{refusal['allocation_ratio']:.1%} at 1st refusal"
        label = f"{row['policy']} ({reached}, {row['unallocated_gpus']:,.0f} GPUs unallocated at end)"
        style = styles[n % len(styles)]
        for axis in (whole, zoom):
            (line,) = axis.plot(arrived, allocated, linestyle=style, linewidth=2, label=label)
            if refusal is not None:
                axis.plot(
                    100 * refusal["arrived_demand_ratio"],
                    100 * refusal["allocation_ratio"],
                    marker="x",
                    markersize=10,
                    markeredgewidth=2,
                    color=line.get_color(),
                )
        rates = row["fragmentation_curve"]
        rate.plot(
            [100 * a for a, _ in rates],
            [100 * r for _, r in rates],
            linestyle=style,
            linewidth=2,
            color=line.get_color(),
            label=row["policy"],
        )
    _label_axes(whole, zoom, rate, report)
    figure.suptitle(
        f"saturation replay of {Path(report['trace']).name}: {report['pods']:,} pods, {report['gpus']:,} GPUs, "
        f"fractional GPUs {report['fractional_gpus'].split(':')[0]}",
        fontsize="medium",
    )
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def _label_axes(whole: Any, zoom: Any, rate: Any, report: dict[str, Any]) -> None:
    """Axes, limits, titles and legends of the three panels."""
    for axis in (whole, zoom):
        axis.plot([0, 130], [0, 130], color="grey", linestyle=":", linewidth=1)
        axis.axvline(100, color="grey", linestyle="--", linewidth=1)
        axis.set_xlabel("arrived GPU demand (% of cluster GPUs)")
        axis.set_ylabel("GPU allocation ratio (%)")
    whole.set_title("whole replay (x: first refusal)", fontsize="medium")
    top = max(101.0, 100 * max(row["arrived_gpu_demand"] / row["capacity_gpus"] for row in report["policies"]))
    zoom.set_xlim(80, top)
    zoom.set_ylim(80, 100.5)
    zoom.set_title("near saturation", fontsize="medium")
    zoom.legend(fontsize="small", loc="lower right")
    rate.set_xlabel("arrived GPU demand (% of cluster GPUs)")
    rate.set_ylabel("fragmentation rate (% of unallocated GPU capacity)")
    rate.set_title("fragmentation rate (the paper's Fig. 7b)", fontsize="medium")
    rate.set_xlim(0, top)
    rate.legend(fontsize="small", loc="upper left")
