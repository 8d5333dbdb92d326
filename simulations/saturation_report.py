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
    for column in (
        "policy",
        "first refusal at demand",
        "allocation at first refusal",
        "allocation at 100 % demand",
        "allocation at the end",
        "unallocated GPUs",
        "refused pods",
        "stranded / free GPUs",
    ):
        table.add_column(column, justify="left" if column == "policy" else "right")
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
            f"{row['refused']:,}",
            f"{fragmentation['stranded_gpus']:,} / {fragmentation['free_gpus']:,}",
        )
    return table


def write_saturation_plot(report: dict[str, Any], path: Path) -> Path:
    """GPU allocation ratio against arrived GPU demand per policy, first refusals marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axis = plt.subplots(figsize=(8, 5))
    for row in report["policies"]:
        arrived = [100 * a for a, _ in row["curve"]]
        allocated = [100 * b for _, b in row["curve"]]
        (line,) = axis.plot(arrived, allocated, label=f"{row['policy']} ({row['unallocated_gpus']} GPUs unallocated)")
        refusal = row["first_refusal"]
        if refusal is not None:
            axis.plot(
                100 * refusal["arrived_demand_ratio"],
                100 * refusal["allocation_ratio"],
                marker="x",
                markersize=9,
                color=line.get_color(),
            )
    axis.plot([0, 100], [0, 100], color="grey", linestyle=":", linewidth=1, label="every arrived GPU allocated")
    axis.axvline(100, color="grey", linestyle="--", linewidth=1)
    axis.set_xlabel("arrived GPU demand (% of cluster GPUs)")
    axis.set_ylabel("GPU allocation ratio (%)")
    axis.set_title(
        f"saturation replay of {Path(report['trace']).name} ({report['gpus']:,} GPUs): x = first refusal",
        fontsize="medium",
    )
    axis.legend(fontsize="small", loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
