"""The jobs a run did not finish, each with a reason.

``never_ran``: jobs the engine never admitted, with the engine's reason: "can never fit"
(``never_fits_reason``, asked once per job shape and team) or why the job still waits.
``unfinished``: jobs admitted at least once that did not finish: still running when the run
ended (at its horizon, or with stages that never complete; the time left counts from the
admission it holds), or preempted/evicted and waiting again, with the engine's reason. Both are asked after the loop, so they change no decision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulations.cluster_spec import GPU_PRODUCT_LABEL, flavor_name
from simulations.engine_driver import EngineDriver, workload_shape
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
        shape = (job.team, *workload_shape(job))
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
    running: dict[str, tuple[float, float | None]],
    driver: EngineDriver,
    end: float,
) -> list[dict[str, Any]]:
    """Every job admitted at least once that did not finish, with why. ``running``: the jobs
    still holding their admission, with when that admission was given and when its pod stages
    finish the job (None: the stages never complete it). A preempted job starts over when it is
    admitted again, so its time left counts from its latest admission, not its first."""
    listed: list[dict[str, Any]] = []
    for key, record in metrics.jobs.items():
        if record.admitted is None or record.finished is not None:
            continue
        removals = record.preemptions + record.evictions
        since: float | None = None
        due: float | None = None
        if key in running:
            since, due = running[key]
            reason = _running_reason(jobs[key], end, since, due, removals)
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
                "admitted": round(record.admitted, 3),  # the first admission
                "running_since": None if since is None else round(since, 3),  # the admission it holds
                "due_to_finish": None if due is None else round(due, 3),
                "preemptions": record.preemptions,
                "evictions": record.evictions,
                "reason": reason,
            }
        )
    return listed


def _running_reason(job: JobSpec, end: float, since: float, due: float | None, removals: int) -> str:
    again = f" (started over: preempted or evicted {removals} time(s) before)" if removals else ""
    head = f"running when the run ended at {end:,.0f} s: admitted at {since:,.0f} s{again}"
    if due is None:
        return f"{head}; its pod stages never complete it"
    return f"{head}, due to finish at {due:,.0f} s ({max(due - end, 0.0):,.0f} s of its {job.duration:,.0f} s left)"
