"""The jobs a run did not finish, each with a reason.

``never_ran``: jobs the engine never admitted, with the engine's reason: "can never fit"
(``never_fits_reason``, asked once per job shape and team) or why the job still waits.
``unfinished``: jobs admitted at least once that did not finish: still running when the run
ended (at its horizon, or with stages that never complete), or preempted/evicted and waiting
again, with the engine's reason. Both are asked after the loop, so they change no decision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulations.cluster import GPU_PRODUCT_LABEL, flavor_name
from simulations.engine_driver import EngineDriver
from simulations.invariants import NodeLedger, pod_amounts
from simulations.metrics import MetricsRecorder
from simulations.workloads import JobSpec


def _waiting(driver: EngineDriver, key: str) -> str:
    return driver.waiting_reason(key)


def _empty_node_for(ledger: NodeLedger | None, job: JobSpec) -> str | None:
    """A node that could hold one pod of ``job`` if it were empty (models allowing), or None."""
    if ledger is None or not ledger.names:
        return None
    fits = (ledger.allocatable >= pod_amounts(job)).all(axis=1)
    if job.gpu_models:
        fits &= np.array([labels.get(GPU_PRODUCT_LABEL) in job.gpu_models for labels in ledger.labels])
    hits = np.flatnonzero(fits)
    return ledger.names[int(hits[0])] if len(hits) else None


def never_ran(
    metrics: MetricsRecorder, jobs: dict[str, JobSpec], driver: EngineDriver, ledger: NodeLedger | None = None
) -> list[dict[str, Any]]:
    never_fits: dict[tuple[Any, ...], str | None] = {}
    listed: list[dict[str, Any]] = []
    for key, record in metrics.jobs.items():
        if record.admitted is not None:
            continue
        job = jobs[key]
        shape = (
            job.team,
            job.nodes,
            job.gpus_per_node,
            job.cpu_milli,
            job.memory_mib,
            job.topology_mode,
            job.topology_level,
            job.gpu_models,
            job.priority_class,
        )
        if shape not in never_fits:
            never_fits[shape] = driver.never_fits_reason(job)
        reason = never_fits[shape]
        extra: dict[str, Any] = {}
        if reason is not None and job.nodes == 1:
            node = _empty_node_for(ledger, job)
            model = ledger.labels[ledger.index[node]].get(GPU_PRODUCT_LABEL) if ledger and node else None
            if node is not None and model is not None and f"flavor {flavor_name(model)}" not in reason:
                # Kueue picks the flavor by quota first (the first that fits) and runs TAS after it:
                # a pod that fits only another flavor's nodes is never tried there
                extra["fits_empty_node"] = node
                reason += (
                    f" (it would fit an empty node of flavor {flavor_name(model)}, e.g. {node}; flavor assignment"
                    " settles on the first flavor whose quota fits, before topology placement, as Kueue's does,"
                    " so that flavor is never tried)"
                )
        listed.append(
            {
                "job": key,
                "cluster_queue": record.cluster_queue,
                "pods": job.nodes,
                "gpus_per_pod": job.gpus_per_node,
                "amount": record.gpus,
                "submitted": round(record.submitted, 3),
                "never_fits": reason is not None,
                "reason": reason if reason is not None else _waiting(driver, key),
                **extra,
            }
        )
    return listed


def unfinished(
    metrics: MetricsRecorder,
    jobs: dict[str, JobSpec],
    running: dict[str, float],
    driver: EngineDriver,
    end: float,
) -> list[dict[str, Any]]:
    """Every job admitted at least once that did not finish, with why (``running``: the jobs
    still holding their admission, and when it was given)."""
    listed: list[dict[str, Any]] = []
    for key, record in metrics.jobs.items():
        if record.admitted is None or record.finished is not None:
            continue
        job = jobs[key]
        removals = record.preemptions + record.evictions
        if key in running:
            started = record.running if record.running is not None else record.admitted
            left = job.duration - (end - started)
            reason = f"running when the run ended at {end:,.0f} s: started at {started:,.0f} s, " + (
                f"{left:,.0f} s of its {job.duration:,.0f} s left" if left > 0 else "its stages never completed it"
            )
            state = "running"
        else:
            reason = f"removed {removals} time(s) (preempted or evicted), waiting again: {_waiting(driver, key)}"
            state = "requeued"
        listed.append(
            {
                "job": key,
                "cluster_queue": record.cluster_queue,
                "state": state,
                "amount": record.gpus,
                "submitted": round(record.submitted, 3),
                "admitted": round(record.admitted, 3),
                "preemptions": record.preemptions,
                "evictions": record.evictions,
                "reason": reason,
            }
        )
    return listed
