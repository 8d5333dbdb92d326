"""Running what-if variants on one seed (in forked processes) and comparing them per queue."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from simulations.metrics import percentiles
from simulations.result import SimulationResult
from simulations.simulator import Simulation
from simulations.whatif.rehearsal import Rehearsal


@dataclass
class VariantResult:
    name: str
    result: SimulationResult
    per_queue: dict[str, dict[str, Any]]


_PENDING_RUNS: list[tuple[str, Rehearsal, int, float | None]] = []  # read by forked workers


def per_queue_figures(simulation: Simulation) -> dict[str, dict[str, Any]]:
    """Per queue, over the scenario's measured window (the warm-up left out, as ``simulate``'s
    report and plots leave it): wait p50/p95 (the report's own ``queue_wait_seconds``), completion
    p50, utilization of nominal quota, mean borrowing and the preemptions suffered, all of the jobs
    submitted in the window."""
    metrics = simulation.metrics
    summary = metrics.summary()
    mean_use = summary["allocation"]["mean"]
    figures: dict[str, dict[str, Any]] = {}
    queues = sorted({r.cluster_queue for r in metrics.jobs.values()} | set(simulation.built.nominal))
    for queue in queues:
        records = [r for r in metrics.jobs.values() if r.cluster_queue == queue and metrics.measured(r)]
        waits = summary["queue_wait_seconds"].get(queue) or percentiles([])
        completion = percentiles([r.finished - r.submitted for r in records if r.finished is not None])
        share = summary["fair_share"].get(queue, {}).get("share_of_use", 0.0)
        nominal = simulation.built.nominal.get(queue, 0)
        figures[queue] = {
            "jobs": len(records),
            "wait_p50_s": waits["p50"],
            "wait_p95_s": waits["p95"],
            "completion_p50_s": completion["p50"],
            "utilization": round(share * mean_use / nominal, 4) if nominal else None,
            "borrowing_mean": summary["borrowing_mean"].get(queue, 0.0),
            "preemptions": sum(r.preemptions for r in records),
            "unfinished": sum(1 for r in records if r.finished is None),
        }
    return figures


def measured_window(result: SimulationResult) -> dict[str, Any]:
    """The window every figure of a run covers, and its units: seconds from the start, the jobs
    left out as warm-up, the unit of utilization and borrowing."""
    summary = result.summary
    window = summary.get("window") or {}
    return {
        "from_s": float(window.get("warmup_seconds", 0.0)),
        "to_s": float(summary["virtual_seconds"]),
        "warmup_jobs_left_out": int(window.get("jobs_submitted_in_warmup", 0)),
        "utilization": "share of the queue's nominal quota in use, time-weighted",
        "borrowing": f"mean {summary.get('unit', 'GPUs')} borrowed beyond nominal, time-weighted",
    }


def run_one(name: str, rehearsal: Rehearsal, seed: int, horizon: float | None = None) -> VariantResult:
    simulation = Simulation(rehearsal.built, seed, horizon=horizon)
    for namespace, labels in rehearsal.namespaces.items():
        simulation.driver.engine.set_namespace(namespace, labels)
    result = simulation.run()
    return VariantResult(name, result, per_queue_figures(simulation))


def _run_pending(index: int) -> VariantResult:
    name, rehearsal, seed, horizon = _PENDING_RUNS[index]
    return run_one(name, rehearsal, seed, horizon)


def run_variants(
    variants: dict[str, Rehearsal], seed: int, *, processes: int | None = None, horizon: float | None = None
) -> dict[str, VariantResult]:
    """Every variant on the same seed; in forked processes (one per core) when there are several."""
    names = list(variants)
    workers = min(len(names), processes or multiprocessing.cpu_count())
    if workers <= 1:
        return {n: run_one(n, variants[n], seed, horizon) for n in names}
    _PENDING_RUNS[:] = [(n, variants[n], seed, horizon) for n in names]
    try:
        # fork: the workers inherit the built scenarios (their job streams are closures)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_run_pending, range(len(names))))
    finally:
        _PENDING_RUNS.clear()
    return {r.name: r for r in results}


FIGURES = ("jobs", "wait_p50_s", "wait_p95_s", "completion_p50_s", "utilization", "borrowing_mean", "preemptions")


def compare(base: VariantResult, other: VariantResult) -> dict[str, dict[str, dict[str, Any]]]:
    """queue -> figure -> {"base", "variant", "change"} (change = variant − base where both exist)."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for queue in sorted(set(base.per_queue) | set(other.per_queue)):
        before, after = base.per_queue.get(queue, {}), other.per_queue.get(queue, {})
        row = {}
        for figure in FIGURES:
            b, a = before.get(figure), after.get(figure)
            change = round(a - b, 4) if isinstance(a, int | float) and isinstance(b, int | float) else None
            row[figure] = {"base": b, "variant": a, "change": change}
        rows[queue] = row
    return rows
