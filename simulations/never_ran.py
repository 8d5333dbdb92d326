"""The jobs a run never admitted, each with the engine's reason.

Asked after the loop, so asking the engine changes no decision: "can never fit"
(``never_fits_reason``, asked once per job shape and team) or why the job still waits.
"""

from __future__ import annotations

from typing import Any

from simulations.engine_driver import EngineDriver
from simulations.metrics import MetricsRecorder
from simulations.workloads import JobSpec


def never_ran(metrics: MetricsRecorder, jobs: dict[str, JobSpec], driver: EngineDriver) -> list[dict[str, Any]]:
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
        listed.append(
            {
                "job": key,
                "cluster_queue": record.cluster_queue,
                "pods": job.nodes,
                "gpus_per_pod": job.gpus_per_node,
                "amount": record.gpus,
                "submitted": round(record.submitted, 3),
                "never_fits": reason is not None,
                "reason": reason if reason is not None else driver.waiting_reason(key),
            }
        )
    return listed
