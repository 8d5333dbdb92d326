"""Simulated TrainJobs as compact records, and synthetic generators modelled on published traces.

A ``JobSpec`` is what the simulator carries per job (a slotted record, no pydantic); the
engine adapter turns it into a Kueue Workload only when the job arrives.

Synthetic mixes (shared/reference/simulation.md §4.1):

- **philly**: Gavel's "Philly distribution" — 1 GPU 70 %, 2 GPUs 10 %, 4 GPUs 15 %, 8 GPUs
  5 %; duration log-uniform over 10^1.5–10^3 minutes with p = 0.8, else 10^3–10^4 minutes.
- **helios**: GPU counts in powers of two up to 256 with median 1 and a heavy tail (mean
  ≈ 4.3 GPUs, close to Helios' 3.72 with its 2,048-GPU maximum cut at 256), durations
  lognormal fitted to Helios' median 206 s and mean 6,652 s (σ = √(2 ln(mean/median))).
- **philly-lognormal**: the Philly GPU mix with durations lognormal fitted to Philly's
  median 874 s and mean 18,006 s.
- **kalos**: Shanghai AI Lab's LLM cluster (Acme Kalos): median 1 GPU but mean ≈ 26 GPUs
  with gangs up to 1,024 GPUs (Kalos: mean 26.77, max 1,024), durations lognormal fitted to
  Kalos' median 124 s and mean 1,260 s. The default for the GPU scenarios: TrainJob clusters
  run many multi-node gangs.

Arrivals are Poisson with a rate set from the offered load: ``rate = load × GPUs / E[GPUs ×
duration]``, so ``load = 1`` would keep the cluster exactly busy on average.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np


@dataclass(slots=True, init=False)
class JobSpec:
    """One TrainJob as the simulator sees it: a gang of ``nodes`` identical pods."""

    name: str
    team: str  # namespace whose LocalQueue the job is submitted to
    submit_time: float  # seconds of virtual time
    nodes: int  # pods in the gang
    gpus_per_node: int
    duration: float  # seconds from all pods Running to completion
    priority_class: str | None
    cpu_milli: int  # per pod
    memory_mib: int  # per pod
    topology_mode: str | None  # "required" | "preferred" | None
    topology_level: str | None
    gpu_models: tuple[str, ...]  # allowed GPU models (openb gpu_spec); empty = any

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        name: str,
        team: str,
        submit_time: float,
        nodes: int,
        gpus_per_node: int,
        duration: float,
        priority_class: str | None = None,
        cpu_milli: int = 0,
        memory_mib: int = 0,
        topology_mode: str | None = None,
        topology_level: str | None = None,
        gpu_models: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.team = team
        self.submit_time = submit_time
        self.nodes = nodes
        self.gpus_per_node = gpus_per_node
        self.duration = duration
        self.priority_class = priority_class
        self.cpu_milli = cpu_milli
        self.memory_mib = memory_mib
        self.topology_mode = topology_mode
        self.topology_level = topology_level
        self.gpu_models = gpu_models

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class SizeMix:
    """A discrete distribution of total GPUs per job."""

    gpus: tuple[int, ...]
    probabilities: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(sum(g * p for g, p in zip(self.gpus, self.probabilities, strict=True)))


PHILLY_SIZES = SizeMix((1, 2, 4, 8), (0.70, 0.10, 0.15, 0.05))
HELIOS_SIZES = SizeMix(
    (1, 2, 4, 8, 16, 32, 64, 128, 256),
    (0.62, 0.10, 0.08, 0.14, 0.035, 0.015, 0.006, 0.003, 0.001),
)

KALOS_SIZES = SizeMix(
    (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    (0.53, 0.05, 0.05, 0.14, 0.06, 0.05, 0.05, 0.035, 0.022, 0.009, 0.004),
)


@dataclass(frozen=True)
class DurationModel:
    kind: str  # "philly-loguniform" | "lognormal" | "fixed"
    median: float = 0.0
    mean: float = 0.0
    scale: float = 1.0  # multiply every duration (compress long traces into short runs)
    minimum: float = 1.0
    maximum: float = 30 * 24 * 3600.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if self.kind == "philly-loguniform":
            short = rng.random(size) < 0.8
            exponent = np.where(short, rng.uniform(1.5, 3.0, size), rng.uniform(3.0, 4.0, size))
            seconds = 60.0 * np.power(10.0, exponent)
        elif self.kind == "lognormal":
            sigma = math.sqrt(2.0 * math.log(self.mean / self.median))
            seconds = rng.lognormal(math.log(self.median), sigma, size)
        elif self.kind == "fixed":
            seconds = np.full(size, self.median)
        else:
            raise ValueError(f"unknown duration model {self.kind!r}")
        return np.clip(seconds * self.scale, self.minimum, self.maximum)

    def expected(self) -> float:
        """Mean duration after scaling and clipping, for the arrival rate.

        Estimated on 200,000 draws from a fixed private seed, so it is the same in every run.
        """
        return float(self.sample(np.random.default_rng(20240101), 200_000).mean())


MIXES: dict[str, tuple[SizeMix, DurationModel]] = {
    "philly": (PHILLY_SIZES, DurationModel("philly-loguniform")),
    "philly-lognormal": (PHILLY_SIZES, DurationModel("lognormal", median=874.0, mean=18006.0)),
    "helios": (HELIOS_SIZES, DurationModel("lognormal", median=206.0, mean=6652.0)),
    "kalos": (KALOS_SIZES, DurationModel("lognormal", median=124.0, mean=1260.0)),
}


@dataclass(frozen=True)
class TeamLoad:
    name: str
    weight: float = 1.0  # share of arrivals
    priority_class: str | None = "normal"
    mix: str | None = None  # this team's own size/duration mix (None: the workload's)
    duration_scale: float | None = None  # None: the workload's


@dataclass(frozen=True)
class SyntheticWorkload:
    """How many jobs, which mix, how loaded, which teams, and how jobs ask for topology."""

    jobs: int
    mix: str = "helios"
    load: float = 0.9
    teams: tuple[TeamLoad, ...] = (TeamLoad("team-a"), TeamLoad("team-b"), TeamLoad("team-c"), TeamLoad("team-d"))
    duration_scale: float = 1.0
    topology_mode: str | None = "preferred"  # how multi-node jobs ask: required | preferred | None
    topology_level: str | None = None  # None: the level just above hostname
    high_priority_fraction: float = 0.0
    cpu_per_gpu_milli: int = 16000
    memory_per_gpu_mib: int = 131072
    max_duration: float = 30 * 24 * 3600.0  # clip the heavy tail (seconds)
    arrivals: str = "poisson"  # poisson | diurnal (see simulations.steady)
    diurnal_amplitude: float = 0.5  # diurnal: the rate swings ± this fraction around its mean over a day
    horizon: float | None = None  # arrivals stop here (seconds); ``jobs`` is then a cap

    @property
    def steady(self) -> bool:
        """Generated by ``simulations.steady`` (diurnal arrivals, a horizon or per-team mixes)."""
        return self.arrivals != "poisson" or self.horizon is not None or any(t.mix for t in self.teams)

    def sizes(self) -> SizeMix:
        return MIXES[self.mix][0]

    def durations(self) -> DurationModel:
        base = MIXES[self.mix][1]
        return DurationModel(base.kind, base.median, base.mean, self.duration_scale, base.minimum, self.max_duration)

    def team_sizes(self, team: TeamLoad) -> SizeMix:
        return MIXES[team.mix or self.mix][0]

    def team_durations(self, team: TeamLoad) -> DurationModel:
        base = MIXES[team.mix or self.mix][1]
        scale = self.duration_scale if team.duration_scale is None else team.duration_scale
        return DurationModel(base.kind, base.median, base.mean, scale, base.minimum, self.max_duration)


def arrival_rate(workload: SyntheticWorkload, cluster_gpus: int) -> float:
    """Jobs per second that offer ``load`` × the cluster's GPU-seconds."""
    work_per_job = workload.sizes().mean * workload.durations().expected()
    return workload.load * cluster_gpus / work_per_job


def make_job(
    workload: SyntheticWorkload,
    index: int,
    team: TeamLoad,
    submit_time: float,
    total_gpus: int,
    duration: float,
    high_priority: bool,
    gpus_per_node: int,
    topology_levels: tuple[str, ...],
) -> JobSpec:
    """One synthetic TrainJob: ``total_gpus`` as a gang of full nodes (or one partial node).

    Multi-node gangs ask for the workload's topology level (default: just above hostname) in
    its mode; a one-pod job is required on one host.
    """
    per_node = min(total_gpus, gpus_per_node)
    nodes = -(-total_gpus // per_node)
    multi = nodes > 1
    level = workload.topology_level or (topology_levels[-2] if len(topology_levels) >= 2 else None)
    hostname_level = topology_levels[-1] if topology_levels else None
    return JobSpec(
        name=f"job-{index:06d}",
        team=team.name,
        submit_time=submit_time,
        nodes=nodes,
        gpus_per_node=per_node,
        duration=duration,
        priority_class="high" if high_priority else team.priority_class,
        cpu_milli=per_node * workload.cpu_per_gpu_milli,
        memory_mib=per_node * workload.memory_per_gpu_mib,
        topology_mode=(workload.topology_mode if multi else "required") if topology_levels else None,
        topology_level=(level if multi else hostname_level) if topology_levels else None,
    )


def jobs_from_draws(
    workload: SyntheticWorkload,
    first_index: int,
    draws: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    gpus_per_node: int,
    topology_levels: tuple[str, ...],
) -> Iterator[JobSpec]:
    """One chunk's jobs from its drawn columns: (submit times, team indexes, GPUs, seconds, high priority)."""
    arrivals, teams, gpus, seconds, high = draws
    for i in range(len(arrivals)):
        yield make_job(
            workload,
            first_index + i,
            workload.teams[int(teams[i])],
            float(arrivals[i]),
            int(gpus[i]),
            float(seconds[i]),
            bool(high[i]),
            gpus_per_node,
            topology_levels,
        )
