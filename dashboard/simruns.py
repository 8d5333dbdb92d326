"""Simulation and what-if runs from their ``--out DIR``, as data the browser draws.

`trainyard simulate --out DIR` writes one run's plots and ``series.json`` into DIR (several runs
of ``--compare`` each into a folder of their own), `trainyard queues what-if --out DIR` writes
``base/`` and ``variant-N/``. Every folder under DIR (DIR itself included, three levels down at
most) that holds a ``series.json`` is a run, named by its path below DIR.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERIES = "series.json"
MAX_DEPTH = 3
CDF_POINTS = 120  # points per queue's wait CDF sent to the browser
MAX_QUEUE_LINES = 12  # more queues are drawn as their total, as the PNG plots do


class RunError(ValueError):
    """A run's file cannot be read: the message names the file and what to do."""


@dataclass(frozen=True)
class SimulationRun:
    name: str  # its folder below the root ("." for the root itself)
    path: Path


def find_runs(roots: list[Path]) -> list[SimulationRun]:
    runs: list[SimulationRun] = []
    for root in roots:
        for series in sorted(_series_files(root, 0)):
            folder = series.parent
            below = folder.relative_to(root).as_posix()
            name = root.name if below == "." else f"{root.name}/{below}"
            runs.append(SimulationRun(name, folder))
    return runs


def _series_files(folder: Path, depth: int) -> list[Path]:
    found = [folder / SERIES] if (folder / SERIES).is_file() else []
    if depth < MAX_DEPTH:
        for child in sorted(p for p in folder.iterdir() if p.is_dir()):
            found.extend(_series_files(child, depth + 1))
    return found


def read_series(run: SimulationRun) -> dict[str, Any]:
    path = run.path / SERIES
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise RunError(f"{path}: cannot be read as JSON ({error}); write it again with --out") from None
    if not isinstance(data, dict) or "hours" not in data:
        raise RunError(f"{path}: not a series.json written by trainyard simulate or what-if --out")
    return data


def _quantile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, max(0, int(fraction * len(values) + 0.999999) - 1))]


def wait_cdf(sorted_waits: list[float]) -> list[list[float]]:
    """(wait seconds, fraction admitted within) at up to ``CDF_POINTS`` points of the sorted waits."""
    count = len(sorted_waits)
    if count == 0:
        return []
    step = max(1, count // CDF_POINTS)
    indices = [*range(0, count, step), count - 1]
    return [[round(sorted_waits[i], 3), round((i + 1) / count, 4)] for i in sorted(set(indices))]


def chart_data(series: dict[str, Any]) -> dict[str, Any]:
    """What the page's charts draw: allocation, queue lengths, wait CDFs, placement tiers."""
    hours = series["hours"]
    pending: dict[str, list[int]] = series.get("pending") or {}
    if len(pending) > MAX_QUEUE_LINES:
        pending = {"all queues": [sum(values) for values in zip(*pending.values(), strict=True)]}
    waits: dict[str, list[float]] = series.get("wait_seconds") or {}
    placement = series.get("placement") or {}
    return {
        "allocation": {
            "x": hours,
            "series": {f"{series.get('unit') or 'GPUs'} allocated": series.get("allocated") or []},
            "limit": series.get("capacity"),
            "shade": series.get("warmup_hours") or 0,
        },
        "queues": {"x": hours, "series": pending, "shade": series.get("warmup_hours") or 0},
        "waits": {queue: wait_cdf(values) for queue, values in list(waits.items())[:MAX_QUEUE_LINES]},
        "tiers": dict(placement.get("tiers") or {}),
    }


def figures(series: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline figures of a run, as (label, value) rows."""
    allocated = series.get("allocated") or []
    capacity = series.get("capacity") or 0
    rows = [
        ("scenario", str(series.get("scenario"))),
        ("seed", str(series.get("seed"))),
        ("capacity", f"{capacity:,} {series.get('unit') or ''}".strip()),
    ]
    if allocated and capacity:
        rows.append(("mean allocation", f"{sum(allocated) / len(allocated) / capacity:.3f} of capacity"))
    for queue, waits in (series.get("wait_seconds") or {}).items():
        p50, p95 = _quantile(waits, 0.5), _quantile(waits, 0.95)
        if p50 is not None and p95 is not None:
            rows.append((f"{queue} wait p50 / p95", f"{p50:,.0f} s / {p95:,.0f} s ({len(waits):,} jobs)"))
    return rows
