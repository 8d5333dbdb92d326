"""The built-in scenario catalogue (`trainyard simulate --scenario NAME`) and the bench scenario."""

from __future__ import annotations

from simulations.cluster import (
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

BUILTIN: dict[str, Scenario] = {
    "gpu-1k": Scenario(
        name="gpu-1k",
        description="1,024 nodes × 8 H100 (4 spines × 8 blocks × 32 nodes), 4 teams, 2,000 TrainJobs (Kalos mix)",
        cluster=ClusterSpec(zones=1, spines_per_zone=4, blocks_per_spine=8, nodes_per_block=32),
        workload=SyntheticWorkload(jobs=2000, mix="kalos", load=2.0, max_duration=86400.0),
        sample_seconds=600.0,
    ),
    "gpu-10k": Scenario(
        name="gpu-10k",
        description="10,240 nodes × 8 GPUs (2 zones × 4 spines × 16 blocks × 80 nodes, NVLink domains of 8), 8 teams, 20,000 TrainJobs",
        cluster=ClusterSpec(zones=2, spines_per_zone=4, blocks_per_spine=16, nodes_per_block=80, nvlink_nodes=8),
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
