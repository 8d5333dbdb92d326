"""A small simulation scenario the simulator tests share: 32 nodes, two teams, 150 Kalos jobs."""

from __future__ import annotations

import dataclasses
from typing import Any

from simulations.cluster_spec import ClusterSpec, QueueSpec, TeamSpec
from simulations.scenarios import Scenario
from simulations.workloads import SyntheticWorkload, TeamLoad

SMALL = ClusterSpec(zones=1, spines_per_zone=2, blocks_per_spine=2, nodes_per_block=8)  # 32 nodes, 256 GPUs


def small_scenario(**changes: Any) -> Scenario:
    base = Scenario(
        name="small",
        cluster=SMALL,
        queues=QueueSpec(teams=(TeamSpec("team-a", 0.5), TeamSpec("team-b", 0.5))),
        workload=SyntheticWorkload(
            jobs=150,
            mix="kalos",
            load=4.0,
            max_duration=7200.0,
            teams=(TeamLoad("team-a", 2.0), TeamLoad("team-b", 1.0, "high")),
        ),
        sample_seconds=60.0,
    )
    return dataclasses.replace(base, **changes)
