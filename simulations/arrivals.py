"""Job arrivals of a synthetic workload: a Poisson stream at the offered load, or the steady-state
generator (``simulations.steady``: diurnal arrivals, a horizon, per-team mixes) when the workload asks
for one. The workload's shapes (mixes, durations, one job) live in ``simulations.workloads``."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from simulations.events import RandomStreams
from simulations.steady import generate_steady_jobs
from simulations.workloads import JobSpec, SyntheticWorkload, arrival_rate, jobs_from_draws


def generate_jobs(
    workload: SyntheticWorkload,
    cluster_gpus: int,
    gpus_per_node: int,
    streams: RandomStreams,
    chunk: int = 4096,
    topology_levels: tuple[str, ...] = (),
) -> Iterator[JobSpec]:
    """Jobs in submit order, drawn lazily in chunks (a 100,000-job run never holds them all).

    Each input has its own random stream, so changing the mix does not move the arrivals.
    Steady-state workloads (diurnal arrivals, a horizon, per-team mixes) come from
    ``simulations.steady``.
    """
    if workload.steady:
        yield from generate_steady_jobs(workload, cluster_gpus, gpus_per_node, streams, chunk, topology_levels)
        return
    sizes = workload.sizes()
    durations = workload.durations()
    rate = arrival_rate(workload, cluster_gpus)
    gaps = streams.numpy("arrivals")
    size_rng = streams.numpy("sizes")
    duration_rng = streams.numpy("durations")
    team_rng = streams.numpy("teams")
    priority_rng = streams.numpy("priorities")
    team_weights = np.array([t.weight for t in workload.teams], dtype=float)
    team_weights /= team_weights.sum()
    probabilities = np.array(sizes.probabilities, dtype=float)
    probabilities /= probabilities.sum()
    now = 0.0
    produced = 0
    while produced < workload.jobs:
        size = min(chunk, workload.jobs - produced)
        arrivals = now + np.cumsum(gaps.exponential(1.0 / rate, size))
        now = float(arrivals[-1])
        gpus = size_rng.choice(np.array(sizes.gpus), size=size, p=probabilities)
        seconds = durations.sample(duration_rng, size)
        teams = team_rng.choice(len(workload.teams), size=size, p=team_weights)
        high = priority_rng.random(size) < workload.high_priority_fraction
        yield from jobs_from_draws(
            workload, produced, (arrivals, teams, gpus, seconds, high), gpus_per_node, topology_levels
        )
        produced += size
