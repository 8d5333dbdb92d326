"""The saturation replay's report: one table (policy per row) and one plot (allocation vs arrived demand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table


def saturation_table(report: dict[str, Any]) -> Table:
    table = Table(
        title=f"saturation replay of {Path(report['trace']).name}: {report['pods']:,} pods in creation order, "
        f"never leaving, on {report['nodes']:,} nodes / {report['gpus']:,} GPUs "
        f"({report['fractional_gpu_pods']:,} fractional-GPU pods {report['fractional_gpus']})",
    )
    table.add_column("policy", no_wrap=True)
    # short words: the table fits 80 columns; the caption says what each one is
    for column in ("refused at", "alloc. then", "alloc. at 100%", "alloc. at end", "free GPUs"):
        table.add_column(column, justify="right", min_width=7 if column != "free GPUs" else 5)
    table.add_column("stranded", justify="right", no_wrap=True)
    table.caption = (
        "refused at: arrived GPU demand (share of the cluster's GPUs) when the first pod was refused; "
        "alloc.: GPUs allocated (share) then, when demand reached 100%, at the end; free GPUs: unallocated at "
        "the end; stranded: free GPUs on nodes no refused GPU pod fits / all free GPUs; refused pods: below"
    )
    for row in report["policies"]:
        refusal = row["first_refusal"]
        fragmentation = row["fragmentation"]
        table.add_row(
            row["policy"],
            "-" if refusal is None else f"{refusal['arrived_demand_ratio']:.1%}",
            "-" if refusal is None else f"{refusal['allocation_ratio']:.1%}",
            "-" if row["allocation_ratio_at_full_demand"] is None else f"{row['allocation_ratio_at_full_demand']:.1%}",
            f"{row['allocation_ratio']:.1%}",
            f"{row['unallocated_gpus']:,}",
            f"{fragmentation['stranded_gpus']:,}/{fragmentation['free_gpus']:,}",
        )
    return table


def write_saturation_plot(report: dict[str, Any], path: Path) -> Path:
    """GPU allocation ratio against arrived GPU demand per policy, first refusals marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, (whole, zoom) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [1, 1.3]})
    styles = ("-", "--", "-.", ":")
    for n, row in enumerate(report["policies"]):
        arrived = [100 * a for a, _ in row["curve"]]
        allocated = [100 * b for _, b in row["curve"]]
        at_refusal = row["first_refusal"]
        reached = "never refused" if at_refusal is None else f"{at_refusal['allocation_ratio']:.1%} at 1st refusal"
        label = f"{row['policy']} ({reached}, {row['unallocated_gpus']} GPUs unallocated at end)"
        for axis in (whole, zoom):
            (line,) = axis.plot(arrived, allocated, linestyle=styles[n % len(styles)], linewidth=2, label=label)
            refusal = row["first_refusal"]
            if refusal is not None:
                axis.plot(
                    100 * refusal["arrived_demand_ratio"],
                    100 * refusal["allocation_ratio"],
                    marker="x",
                    markersize=10,
                    markeredgewidth=2,
                    color=line.get_color(),
                )
    for axis in (whole, zoom):
        axis.plot([0, 120], [0, 120], color="grey", linestyle=":", linewidth=1)
        axis.axvline(100, color="grey", linestyle="--", linewidth=1)
        axis.set_xlabel("arrived GPU demand (% of cluster GPUs)")
        axis.set_ylabel("GPU allocation ratio (%)")
    whole.set_title("whole replay (x: first refusal)", fontsize="medium")
    zoom.set_xlim(
        85, max(101.0, 100 * max(row["arrived_gpu_demand"] / row["capacity_gpus"] for row in report["policies"]))
    )
    zoom.set_ylim(85, 100.5)
    zoom.set_title("near saturation", fontsize="medium")
    zoom.legend(fontsize="small", loc="lower right")
    figure.suptitle(
        f"saturation replay of {Path(report['trace']).name}: {report['pods']:,} pods, {report['gpus']:,} GPUs, "
        "fractional GPUs rounded up",
        fontsize="medium",
    )
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
