"""`bench controller --real`'s stage split: where a launch's time goes, from the watch events it saw."""

from __future__ import annotations

from typing import Any

from trainyard.benchmarks.controller_real import WorkloadStages


def _workload(owner: str, *, admitted: bool) -> dict[str, Any]:
    reference = {"kind": "TrainJob", "name": owner, "controller": True}
    status = {"admission": {"clusterQueue": "cq"}} if admitted else {}
    return {"metadata": {"name": f"trainjob-{owner}", "ownerReferences": [reference]}, "status": status}


def test_each_stage_is_the_median_between_its_first_sightings() -> None:
    stages = WorkloadStages()
    for owner, created, admitted in [("a", 1.010, 1.030), ("b", 2.020, 2.100), ("c", 3.040, 3.050)]:
        stages.created[owner] = created
        stages.admitted[owner] = admitted
    created_at = {"a": 1.0, "b": 2.0, "c": 3.0}
    launched_at = {"a": 1.040, "b": 2.300, "c": 3.060}

    assert stages.medians(created_at, launched_at) == {
        "workload_created": 20.0,
        "admitted": 20.0,
        "jobset_created": 10.0,
    }


def test_a_workload_is_created_once_and_admitted_when_its_admission_shows() -> None:
    stages = WorkloadStages()
    stages.observe(_workload("a", admitted=False))
    first_seen = stages.created["a"]
    stages.observe(_workload("a", admitted=False))
    assert stages.created["a"] == first_seen
    assert "a" not in stages.admitted
    stages.observe(_workload("a", admitted=True))
    assert stages.admitted["a"] >= first_seen


def test_jobs_without_every_stage_are_left_out() -> None:
    stages = WorkloadStages()
    stages.created["a"] = 1.0
    assert stages.medians({"a": 0.5}, {"a": 2.0}) == {}
