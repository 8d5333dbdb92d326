"""The chaos benchmark at 1,000 TrainJobs: API faults and controller kills lose nothing, admit
nothing twice and never exceed quota (about a minute: the run issue 11 asks to be part of the tests)."""

from __future__ import annotations

import argparse

import pytest

from trainyard.benchmarks.chaos import measure


@pytest.mark.slow
async def test_jobs_through_faults_and_restarts_settle_clean() -> None:
    args = argparse.Namespace(
        jobs=1000,
        rate=100.0,
        fault_rate=0.03,
        restart_every=2.0,
        cpu_per_queue=24,
        seed=7,
        settle_timeout=300.0,
        progress=0.0,
        compaction_every=10.0,
    )
    result = await measure(args)
    assert result["lost"] == 0, result["examples"]
    assert result["double_admitted"] == 0, result["examples"]
    assert result["quota_violations"] == 0, result["examples"]
    # the run really was chaotic: the controller was killed and the server misbehaved
    assert result["controller_restarts"] >= 2
    assert result["faults_injected"] >= 20
    assert result["admissions"] >= 1000
