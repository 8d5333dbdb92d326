"""JobSet status -> TrainJob status, as Trainer writes it (pure functions, upstream-shaped statuses)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.controllers.launcher.trainjob_status import (
    is_finished,
    jobs_status,
    set_condition,
    status_differs,
    trainjob_status,
)
from scheduler.controllers.views import JobSetStatusView
from tests.builders import trainjob

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"


def trainjob_with(suspend: bool, conditions: list[dict[str, Any]] | None = None, **status: Any) -> dict[str, Any]:
    """The TrainJob ``llm``, suspended or not, with a status of these fields and ``conditions``."""
    doc = trainjob("llm", "a", nodes=None, suspend=suspend)
    if conditions is not None or status:
        doc["status"] = {**status, **({"conditions": conditions} if conditions is not None else {})}
    return doc


def jobset(*conditions: tuple[str, str, str, str], jobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "llm"},
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": T0}
                for t, s, r, m in conditions
            ],
            "replicatedJobsStatus": jobs or [],
        },
    }


def by_type(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status.get("conditions") or ()}


def test_a_queued_trainjob_is_suspended_and_has_no_jobs() -> None:
    status = trainjob_status(trainjob_with(True), None, now=T0)
    assert by_type(status) == {"Suspended": ("True", "Suspended", "TrainJob is suspended")}
    assert status["jobsStatus"] == []


def test_resumed_with_a_jobset_is_created_and_resumed_and_keeps_the_suspension_time_apart() -> None:
    queued = trainjob_status(trainjob_with(True), None, now=T0)
    running = trainjob_status(
        {**trainjob_with(False), "status": queued},
        jobset(jobs=[{"name": "node", "ready": 2, "active": 2}]),
        now=T1,
    )
    assert by_type(running) == {
        "Suspended": ("False", "Resumed", "TrainJob is resumed"),
        "Created": ("True", "JobsCreationSucceeded", "Succeeded to create Jobs"),
    }
    assert running["jobsStatus"] == [
        {"name": "node", "ready": 2, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}
    ]
    suspended = next(c for c in running["conditions"] if c["type"] == "Suspended")
    assert suspended["lastTransitionTime"] == T1  # the status flipped


def test_a_never_suspended_job_gets_no_suspended_condition() -> None:
    assert "Suspended" not in by_type(trainjob_status(trainjob_with(False), jobset(), now=T0))


@pytest.mark.parametrize(
    ("jobset_condition", "expected"),
    [
        (("Completed", "True", "AllJobsCompleted", "jobset completed successfully"), "Complete"),
        (("Failed", "True", "FailedJobs", "jobset failed due to one or more job failures"), "Failed"),
        (("Failed", "True", "ReachedMaxRestarts", "jobset failed due to reaching max number of restarts"), "Failed"),
    ],
    ids=["completed", "failed jobs", "max restarts"],
)
def test_terminal_jobset_conditions_are_copied_with_reason_and_message(
    jobset_condition: tuple[str, str, str, str], expected: str
) -> None:
    status = trainjob_status(trainjob_with(False), jobset(jobset_condition), now=T1)
    assert by_type(status)[expected] == ("True", jobset_condition[2], jobset_condition[3])
    assert is_finished(status)


def test_false_or_other_jobset_conditions_are_not_copied() -> None:
    status = trainjob_status(
        trainjob_with(False),
        jobset(("Completed", "False", "x", "y"), ("StartupPolicyCompleted", "True", "s", "t")),
        now=T1,
    )
    assert set(by_type(status)) == {"Created"}
    assert not is_finished(status)


def test_a_finished_job_keeps_its_counts_when_the_jobset_is_gone() -> None:
    finished = trainjob_with(
        False,
        [
            {
                "type": "Complete",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "m",
                "lastTransitionTime": T0,
            }
        ],
        jobsStatus=[{"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}],
    )
    status = trainjob_status(finished, None, now=T1)
    assert status["jobsStatus"][0]["succeeded"] == 1
    assert not status_differs(finished["status"], status)


def test_other_fields_are_kept_and_unchanged_status_is_not_rewritten() -> None:
    current = trainjob_with(True, [], trainerStatus={"progressPercentage": 40})
    status = trainjob_status(current, None, now=T0)
    assert status["trainerStatus"] == {"progressPercentage": 40}
    assert status_differs(current["status"], status)
    again = trainjob_status({**current, "status": status}, None, now=T1)
    assert not status_differs(status, again)


def test_set_condition_keeps_the_transition_time_unless_the_status_changes() -> None:
    conditions = set_condition([], "Created", "True", "A", "a", T0)
    same = set_condition(conditions, "Created", "True", "B", "b", T1)
    assert same[0]["lastTransitionTime"] == T0
    assert same[0]["reason"] == "B"
    flipped = set_condition(same, "Created", "False", "C", "c", T1)
    assert flipped[0]["lastTransitionTime"] == T1


def test_jobs_status_fills_every_count() -> None:
    assert jobs_status(JobSetStatusView({"status": {"replicatedJobsStatus": [{"name": "launcher"}]}})) == [
        {"name": "launcher", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    ]
