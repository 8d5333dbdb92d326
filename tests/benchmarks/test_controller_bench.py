"""`bench controller` at a small size: every job reaches its JobSet within the write budget."""

from __future__ import annotations

from trainyard.benchmarks.controller import measure


async def test_jobs_reach_their_jobset_within_four_object_writes() -> None:
    result = await measure(jobs=20, rate=20.0)
    assert result["jobs"] == 20
    assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["max_ms"]
    # Workload create, PodGroup, JobSet, TrainJob unsuspend: at most 4 object writes per job
    assert result["writes_per_job"] <= 4.0
