"""A TrainJob's status as Kubeflow Trainer writes it, worked out from its JobSet (pure functions).

Trainer's controller (``pkg/controller/trainjob_controller.go`` and the JobSet plugin's status
hook) keeps these in ``TrainJob.status``; in the launcher's ``jobset`` mode there is no Trainer
controller, so trainyard writes the same shapes:

- ``Suspended``: True with reason ``Suspended`` ("TrainJob is suspended") while ``spec.suspend``;
  False with reason ``Resumed`` ("TrainJob is resumed") once a suspended job is resumed;
- ``Created``: True with reason ``JobsCreationSucceeded`` ("Succeeded to create Jobs") once the
  JobSet exists (Trainer's condition before v2.0; kept because kubectl users read it);
- ``Complete`` / ``Failed``: copied from the JobSet's ``Completed`` / ``Failed`` conditions with
  their reason and message (``AllJobsCompleted``, ``FailedJobs``, ``ReachedMaxRestarts``, ...);
- ``jobsStatus``: the JobSet's ``replicatedJobsStatus``, every count filled in.

Conditions follow metav1.Condition: ``lastTransitionTime`` changes only when the status flips.
Nothing here does I/O; the sandbox reuses it to play Trainer's part.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from scheduler.controllers.conditions import find_condition
from scheduler.controllers.views import JobSetStatusView

SUSPENDED = "Suspended"
CREATED = "Created"
COMPLETE = "Complete"
FAILED = "Failed"

SUSPENDED_REASON = "Suspended"
SUSPENDED_MESSAGE = "TrainJob is suspended"
RESUMED_REASON = "Resumed"
RESUMED_MESSAGE = "TrainJob is resumed"
CREATED_REASON = "JobsCreationSucceeded"
CREATED_MESSAGE = "Succeeded to create Jobs"

# JobSet condition type -> TrainJob condition type (JobSet's reason and message are kept).
JOBSET_TERMINAL_CONDITIONS = {"Completed": COMPLETE, "Failed": FAILED}
JOB_STATUS_COUNTS = ("ready", "succeeded", "failed", "active", "suspended")


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_true(conditions: Sequence[Mapping[str, Any]] | None, kind: str) -> bool:
    condition = find_condition(conditions, kind)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    kind: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    observed_generation: int | None = None,
) -> list[dict[str, Any]]:
    """``conditions`` with ``kind`` set (apimachinery's meta.SetStatusCondition): the transition
    time is kept unless the status changes; a new condition is appended."""
    updated: list[dict[str, Any]] = []
    found = False
    for condition in conditions or ():
        if condition.get("type") != kind:
            updated.append(dict(condition))
            continue
        found = True
        changed = condition.get("status") != status
        entry = dict(condition)
        entry.update(status=status, reason=reason, message=message)
        if changed or not entry.get("lastTransitionTime"):
            entry["lastTransitionTime"] = now
        if observed_generation is not None:
            entry["observedGeneration"] = observed_generation
        updated.append(entry)
    if not found:
        entry = {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
        if observed_generation is not None:
            entry["observedGeneration"] = observed_generation
        updated.append(entry)
    return updated


def suspended_condition(suspend: bool, conditions: Sequence[Mapping[str, Any]] | None) -> tuple[str, str, str] | None:
    """(status, reason, message) of the Suspended condition Trainer would set, or None to leave it."""
    if suspend:
        return "True", SUSPENDED_REASON, SUSPENDED_MESSAGE
    if condition_true(conditions, SUSPENDED):
        return "False", RESUMED_REASON, RESUMED_MESSAGE
    return None


def terminal_conditions(jobset: JobSetStatusView) -> list[tuple[str, str, str, str]]:
    """(TrainJob type, status, reason, message) for each terminal JobSet condition that is True."""
    found: list[tuple[str, str, str, str]] = []
    for condition in jobset.true_conditions():
        target = JOBSET_TERMINAL_CONDITIONS.get(str(condition.get("type")))
        if target is None:
            continue
        found.append((target, "True", str(condition.get("reason") or ""), str(condition.get("message") or "")))
    return found


def jobs_status(jobset: JobSetStatusView) -> list[dict[str, Any]]:
    """Trainer's ``jobsStatus``: one entry per replicated job, every count present (they are required)."""
    entries: list[dict[str, Any]] = []
    for job in jobset.replicated_jobs:
        entry: dict[str, Any] = {"name": str(job.get("name", ""))}
        for count in JOB_STATUS_COUNTS:
            entry[count] = int(job.get(count) or 0)
        entries.append(entry)
    return entries


def is_finished(trainjob_status: Mapping[str, Any] | None) -> bool:
    conditions = (trainjob_status or {}).get("conditions")
    return condition_true(conditions, COMPLETE) or condition_true(conditions, FAILED)


def trainjob_status(
    trainjob: Mapping[str, Any], jobset: Mapping[str, Any] | None, *, now: str | None = None
) -> dict[str, Any]:
    """The TrainJob status Trainer would write, given the TrainJob and its JobSet (None: none yet).

    Fields of the current status this does not own (``trainerStatus``, other conditions) are kept.
    Without a JobSet ``jobsStatus`` is emptied, unless the job finished (the last counts stay, as
    Trainer keeps them after a TTL deletes the JobSet).
    """
    stamp = now or now_rfc3339()
    status: dict[str, Any] = copy.deepcopy(dict(trainjob.get("status") or {}))
    conditions: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or ()]
    suspend = bool((trainjob.get("spec") or {}).get("suspend"))
    suspended = suspended_condition(suspend, conditions)
    if suspended is not None:
        conditions = set_condition(conditions, SUSPENDED, *suspended, stamp)
    if jobset is not None:
        conditions = set_condition(conditions, CREATED, "True", CREATED_REASON, CREATED_MESSAGE, stamp)
        jobset_status = JobSetStatusView(jobset)
        for kind, state, reason, message in terminal_conditions(jobset_status):
            conditions = set_condition(conditions, kind, state, reason, message, stamp)
        status["jobsStatus"] = jobs_status(jobset_status)
    elif not is_finished(status):
        status["jobsStatus"] = []
    if conditions:
        status["conditions"] = conditions
    return status


def status_differs(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """Whether writing ``desired`` would change anything (an absent list equals an empty one)."""
    before = dict(current or {})
    for name in ("conditions", "jobsStatus"):
        if not before.get(name) and not desired.get(name):
            before.pop(name, None)
    after = {k: v for k, v in desired.items() if not (k in ("conditions", "jobsStatus") and not v)}
    return before != after
