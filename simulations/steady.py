"""Steady-state synthetic workloads: diurnal arrivals over a whole horizon, per-team job mixes.

A capacity planner wants the cluster busy the way a production one is: arrivals all through
the run rather than a burst at the start, a rate that swings over the day, and teams that
submit different kinds of work. Here:

- **arrivals**: a non-homogeneous Poisson process with rate
  ``λ(t) = λ̄ · (1 + A · sin(2π t / 86,400 s − π/2))`` (lowest at t = 0, the night; highest at
  noon), drawn by thinning a Poisson stream at the peak rate ``λ̄ (1 + A)``. ``λ̄`` is set from the
  offered load exactly as for Poisson arrivals (``load × GPUs / E[GPUs × duration]``), so the
  offered load averaged over whole days is ``load``.
- **teams**: each team picks its share of the arrivals (``weight``) and may have its own
  size/duration mix (``TeamLoad.mix``, ``duration_scale``), so ``E[GPUs × duration]`` is the
  arrival-weighted mean over the teams' mixes.
- **horizon**: arrivals stop at ``workload.horizon``; ``workload.jobs`` caps the count.

Every input keeps its own random stream (arrivals, thinning, teams, sizes, durations,
priorities), so changing a mix does not move the arrivals.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from simulations.events import RandomStreams
from simulations.workloads import DurationModel, JobSpec, SizeMix, SyntheticWorkload, jobs_from_draws

DAY = 86_400.0


def _team_weights(workload: SyntheticWorkload) -> np.ndarray:
    weights = np.array([t.weight for t in workload.teams], dtype=float)
    return np.asarray(weights / float(weights.sum()), dtype=float)


def mean_work_per_job(workload: SyntheticWorkload) -> float:
    """E[GPUs × duration] of one job, over the teams' arrival shares and mixes (GPU-seconds)."""
    weights = _team_weights(workload)
    return float(
        sum(
            w * workload.team_sizes(t).mean * workload.team_durations(t).expected()
            for w, t in zip(weights, workload.teams, strict=True)
        )
    )


def mean_rate(workload: SyntheticWorkload, cluster_gpus: int) -> float:
    """Jobs per second, averaged over a day, that offer ``load`` × the cluster's GPU-seconds."""
    return workload.load * cluster_gpus / mean_work_per_job(workload)


def rate_at(workload: SyntheticWorkload, mean: float, t: float) -> float:
    if workload.arrivals != "diurnal":
        return mean
    return mean * (1.0 + workload.diurnal_amplitude * math.sin(2.0 * math.pi * t / DAY - math.pi / 2.0))


def expected_jobs(workload: SyntheticWorkload, cluster_gpus: int) -> int:
    """How many jobs the run will submit, about (exact without a horizon): for progress bars."""
    if workload.horizon is None:
        return workload.jobs
    return min(workload.jobs, round(mean_rate(workload, cluster_gpus) * workload.horizon))


def generate_steady_jobs(
    workload: SyntheticWorkload,
    cluster_gpus: int,
    gpus_per_node: int,
    streams: RandomStreams,
    chunk: int = 4096,
    topology_levels: tuple[str, ...] = (),
) -> Iterator[JobSpec]:
    """Jobs in submit order until ``workload.jobs`` or the horizon, drawn lazily in chunks."""
    mean = mean_rate(workload, cluster_gpus)
    diurnal = workload.arrivals == "diurnal"
    peak = mean * (1.0 + workload.diurnal_amplitude) if diurnal else mean
    gaps = streams.numpy("arrivals")
    thinning = streams.numpy("diurnal")
    team_rng = streams.numpy("teams")
    size_rng = streams.numpy("sizes")
    duration_rng = streams.numpy("durations")
    priority_rng = streams.numpy("priorities")
    weights = _team_weights(workload)
    mixes = [(workload.team_sizes(t), workload.team_durations(t)) for t in workload.teams]
    horizon = math.inf if workload.horizon is None else workload.horizon
    now = 0.0
    produced = 0
    while produced < workload.jobs and now < horizon:
        candidates = now + np.cumsum(gaps.exponential(1.0 / peak, chunk))
        now = float(candidates[-1])
        if diurnal:
            phase = 2.0 * np.pi * candidates / DAY - np.pi / 2.0
            keep = thinning.random(chunk) * peak < mean * (1.0 + workload.diurnal_amplitude * np.sin(phase))
            arrivals = candidates[keep]
        else:
            arrivals = candidates
        arrivals = arrivals[arrivals < horizon][: workload.jobs - produced]
        size = len(arrivals)
        if not size:
            continue
        teams = team_rng.choice(len(workload.teams), size=size, p=weights)
        high = priority_rng.random(size) < workload.high_priority_fraction
        gpus, seconds = _draw_sizes(mixes, teams, size_rng, duration_rng)
        draws = (arrivals, teams, gpus, seconds, high)
        yield from jobs_from_draws(workload, produced, draws, gpus_per_node, topology_levels)
        produced += size


def _draw_sizes(
    mixes: list[tuple[SizeMix, DurationModel]],
    teams: np.ndarray,
    size_rng: np.random.Generator,
    duration_rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """GPUs and seconds of each job from its team's mix. Every team's mix is drawn for every
    job, then each job takes its team's draw: the streams advance the same way whatever the
    team of each job."""
    size = len(teams)
    gpus = np.zeros(size, dtype=np.int64)
    seconds = np.zeros(size, dtype=float)
    for index, (sizes, durations) in enumerate(mixes):
        probabilities = np.array(sizes.probabilities, dtype=float)
        drawn_gpus = size_rng.choice(np.array(sizes.gpus), size=size, p=probabilities / probabilities.sum())
        drawn_seconds = durations.sample(duration_rng, size)
        mine = teams == index
        gpus[mine] = drawn_gpus[mine]
        seconds[mine] = drawn_seconds[mine]
    return gpus, seconds
