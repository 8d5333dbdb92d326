"""The built-in scenario catalogue (`trainyard simulate --scenario NAME`) and the bench scenario."""

from __future__ import annotations

import dataclasses

from simulations.cluster_spec import (
    ClusterSpec,
    QueueSpec,
    TeamSpec,
)
from simulations.scenarios.spec import IMMEDIATE_STAGES_DIR, KueuePerfSpec, Scenario
from simulations.workloads import SyntheticWorkload, TeamLoad

KUEUE_BASELINE = KueuePerfSpec(
    cohorts=5,
    queues_per_cohort=6,
    classes=(("small", 350, 1, 0.2, 50, 0.1), ("medium", 100, 5, 0.5, 100, 0.5), ("large", 50, 20, 1.0, 200, 1.2)),
)
KUEUE_LARGE = KueuePerfSpec(
    cohorts=10,
    queues_per_cohort=100,
    classes=(("small", 35, 1, 0.15, 50, 0.06), ("medium", 11, 5, 0.35, 100, 0.3), ("large", 4, 20, 0.7, 200, 0.7)),
)

DAY = 86_400.0
GPU_1K_CLUSTER = ClusterSpec(zones=1, spines_per_zone=4, blocks_per_spine=8, nodes_per_block=32)
GPU_10K_CLUSTER = ClusterSpec(zones=2, spines_per_zone=4, blocks_per_spine=16, nodes_per_block=80, nvlink_nodes=8)

# Steady-state teams (shared/reference/simulation.md §4.1). Arrival shares differ from quota
# shares on purpose: team-a (LLM training: Kalos-like gangs, median 1 GPU, mean ≈ 26, up to
# 1,024; durations after Kalos' median 124 s / mean 1,260 s, here × 16) offers more work than
# its nominal quota and borrows; team-b (production: Gavel's Philly distribution, 1-8 GPUs,
# log-uniform 30 min - 7 days) offers less and reclaims what it lent (reclaimWithinCohort: Any);
# team-c (research: Helios-like, powers of two up to 256 GPUs, median 1; durations after
# Helios' median 206 s / mean 6,652 s, here × 8) runs at low priority; team-d (Philly mix) at
# high priority on a small quota. Durations are clipped at 12 h so the cluster reaches its
# steady state within the warm-up.
STEADY_QUEUES = QueueSpec(
    teams=(
        TeamSpec("team-a", 0.45, borrowing_limit_share=0.2),
        TeamSpec("team-b", 0.25, borrowing_limit_share=0.1),
        TeamSpec("team-c", 0.15, borrowing_limit_share=0.15),
        TeamSpec("team-d", 0.15, borrowing_limit_share=0.05),
    )
)
STEADY_TEAMS = (
    TeamLoad("team-a", 0.25, "normal", mix="kalos", duration_scale=16.0),
    TeamLoad("team-b", 0.225, "normal", mix="philly"),
    TeamLoad("team-c", 0.3, "low", mix="helios", duration_scale=8.0),
    TeamLoad("team-d", 0.225, "high", mix="philly"),
)


def steady_workload(load: float, horizon: float, teams: tuple[TeamLoad, ...] = STEADY_TEAMS) -> SyntheticWorkload:
    """Diurnal arrivals (± 40 % over the day) for ``horizon`` seconds at ``load`` × capacity."""
    return SyntheticWorkload(
        jobs=1_000_000,  # the horizon ends the arrivals
        mix="helios",
        load=load,
        teams=teams,
        high_priority_fraction=0.03,
        max_duration=DAY / 2,
        arrivals="diurnal",
        diurnal_amplitude=0.4,
        horizon=horizon,
    )


def doubled(queues: QueueSpec, teams: tuple[TeamLoad, ...]) -> tuple[QueueSpec, tuple[TeamLoad, ...]]:
    """The steady teams twice over (team-a..d, team-e..h), each quota and arrival share halved."""
    renamed = {f"team-{a}": (f"team-{a}", f"team-{b}") for a, b in zip("abcd", "efgh", strict=True)}
    specs = tuple(
        dataclasses.replace(
            t,
            name=name,
            share=t.share / 2,
            borrowing_limit_share=None if t.borrowing_limit_share is None else t.borrowing_limit_share / 2,
        )
        for t in queues.teams
        for name in renamed[t.name]
    )
    loads = tuple(dataclasses.replace(t, name=name, weight=t.weight / 2) for t in teams for name in renamed[t.name])
    return dataclasses.replace(queues, teams=specs), loads


def steady_scenario(
    name: str,
    cluster: ClusterSpec,
    *,
    horizon: float = DAY,
    warmup: float = 8 * 3600.0,
    load: float = 1.0,
    sample_seconds: float = 600.0,
    eight_teams: bool = False,
) -> Scenario:
    """A steady-state scenario on ``cluster`` (``gpu-1k``'s shape at any size; tests use small ones)."""
    queues, teams = doubled(STEADY_QUEUES, STEADY_TEAMS) if eight_teams else (STEADY_QUEUES, STEADY_TEAMS)
    return Scenario(
        name=name,
        description=f"{cluster.node_count:,} nodes × {cluster.gpus_per_node} {cluster.gpu_model}, "
        f"{len(teams)} teams with quotas and borrowing, {horizon / 3600:g} h of diurnal arrivals at offered "
        f"load {load:g} (Kalos/Philly/Helios job mixes, priorities); the first {warmup / 3600:g} h are warm-up, "
        "left out of the metrics",
        cluster=cluster,
        queues=queues,
        workload=steady_workload(load, horizon, teams),
        sample_seconds=sample_seconds,
        warmup_seconds=warmup,
    )


BUILTIN: dict[str, Scenario] = {
    "gpu-1k": steady_scenario("gpu-1k", GPU_1K_CLUSTER),
    "gpu-1k-burst": Scenario(
        name="gpu-1k-burst",
        description="1,024 nodes × 8 H100 (4 spines × 8 blocks × 32 nodes), 4 teams, 2,000 TrainJobs in a burst "
        "(Kalos mix; gpu-1k before it became steady-state)",
        cluster=GPU_1K_CLUSTER,
        workload=SyntheticWorkload(jobs=2000, mix="kalos", load=2.0, max_duration=86400.0),
        sample_seconds=600.0,
    ),
    "gpu-10k": steady_scenario(
        "gpu-10k", GPU_10K_CLUSTER, horizon=DAY / 2, warmup=6 * 3600.0, sample_seconds=1200.0, eight_teams=True
    ),
    "gpu-10k-burst": Scenario(
        name="gpu-10k-burst",
        description="10,240 nodes × 8 GPUs (2 zones × 4 spines × 16 blocks × 80 nodes, NVLink domains of 8), "
        "8 teams, 20,000 TrainJobs in a burst (gpu-10k before it became steady-state)",
        cluster=GPU_10K_CLUSTER,
        queues=QueueSpec(teams=tuple(TeamSpec(f"team-{c}", 0.125) for c in "abcdefgh")),
        workload=SyntheticWorkload(
            jobs=20000,
            mix="kalos",
            load=1.2,
            max_duration=86400.0,
            teams=tuple(TeamLoad(f"team-{c}") for c in "abcdefgh"),
        ),
        sample_seconds=1800.0,
    ),
    "kueue-baseline": Scenario(
        name="kueue-baseline",
        description="Kueue perf baseline: 5 cohorts × 6 ClusterQueues, 15,000 CPU workloads small/medium/large",
        kueue_perf=KUEUE_BASELINE,
        stages=(IMMEDIATE_STAGES_DIR,),
        sample_seconds=5.0,
    ),
    "kueue-large": Scenario(
        name="kueue-large",
        description="Kueue perf large-scale: 10 cohorts × 100 ClusterQueues, 50,000 CPU workloads",
        kueue_perf=KUEUE_LARGE,
        stages=(IMMEDIATE_STAGES_DIR,),
        sample_seconds=5.0,
    ),
}

BENCH_SCENARIO = Scenario(
    name="bench-10k",
    description="10,000 nodes × 8 GPUs (10 spines × 10 blocks × 100 nodes), 4 teams, 100,000 TrainJobs",
    cluster=ClusterSpec(zones=1, spines_per_zone=10, blocks_per_spine=10, nodes_per_block=100),
    workload=SyntheticWorkload(jobs=100_000, mix="kalos", load=1.2, max_duration=86400.0),
    sample_seconds=3600.0,
)
