"""The engine held to real Kueue v0.17: `bench parity`'s own code on `trainyard admit`'s inputs.

One cluster for this module (kube-apiserver, etcd and Kueue with fair sharing on, as
`bench parity` starts it: a second admitter cannot share the session's cluster). Each input's
Kueue objects and Workloads go to Kueue and to trainyard's engine in the same steps; every
Workload must be decided alike (admitted or not, ClusterQueue, flavors, preempted or not).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.real.binaries import ClusterTools
from sandbox.real.control_plane import RealCluster
from trainyard.benchmarks.parity import parity_settings, run_inputs
from trainyard.benchmarks.parity_inputs import objects_input

REPO = Path(__file__).resolve().parents[2]
# a hierarchical cohort under fair sharing (Kueue's tournament), and preemption within a queue
INPUTS = (
    ("tests/scenarios/fair_sharing_hierarchical_tournament.yaml", True),
    ("tests/scenarios/fair_sharing_preemption.yaml", True),
)


@pytest.fixture(scope="module")
def parity_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    tools = ClusterTools.locate()
    if not tools.has("kueue"):
        pytest.skip("real tier parity: kueue not built; run `make cluster-tools` (needs Go)")
    workdir = tmp_path_factory.mktemp("real-cluster-parity")
    with RealCluster(tools, parity_settings(fair_sharing=True), workdir=workdir) as cluster:
        yield cluster


def test_the_engine_decides_as_kueue_on_admits_inputs(parity_cluster: RealCluster) -> None:
    inputs = [objects_input([str(REPO / path)], fair_sharing) for path, fair_sharing in INPUTS]
    runs: list[dict[str, Any]] = asyncio.run(run_inputs(parity_cluster, inputs))
    for run in runs:
        assert run["workloads"] > 0, run["input"]
        assert run["decisions_equal_pct"] == 100.0, run
    assert sum(run["admissions"]["kueue"] for run in runs) > 0
