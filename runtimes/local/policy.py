"""Failure handling of a local run: podFailurePolicy per Job, then the JobSet failurePolicy.

Pure functions of (what exited, the policies, how many restarts were counted), so every rule
is tested without processes. The semantics are Kubernetes' and JobSet's:

1. The failed pod is matched against its Job's ``podFailurePolicy`` rules in order; the first
   matching ``onExitCodes`` rule decides: ``FailJob`` fails the Job at once (reason
   ``PodFailurePolicy``), ``Ignore`` does not count the failure, ``Count``/``FailIndex`` (or no
   match) count it. Local runs treat the pods of a Job as one gang that cannot lose a member,
   so a counted failure fails the Job (as with ``backoffLimit: 0``; reason
   ``BackoffLimitExceeded``); an ignored one restarts the gang without counting.
2. A failed Job goes through the JobSet ``failurePolicy``: no policy fails the JobSet
   (``FailedJobs``); otherwise the first rule whose reasons, message patterns and target jobs
   match picks the action (no match: ``RestartJobSet``). ``FailJobSet`` fails it
   (``FailJobSetFailurePolicyAction``); ``RestartJobSet`` restarts it and counts towards
   ``maxRestarts`` (once exceeded: ``ReachedMaxRestarts``); the ``...AndIgnoreMaxRestarts``
   actions restart without counting. ``RestartJob*`` restart the whole gang locally.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runtimes.local.plan import FailurePolicy, JobSetFailureRule, PodFailureRule

REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_BACKOFF_LIMIT = "BackoffLimitExceeded"


@dataclass(frozen=True)
class RankExit:
    """A local "pod" that ended: which one, and its exit code (128+N when killed by signal N)."""

    label: str
    replicated_job: str
    container: str
    exit_code: int
    detail: str = ""  # the process's last line of output, often the error

    @property
    def failed(self) -> bool:
        return self.exit_code != 0


@dataclass(frozen=True)
class Decision:
    """What the launcher does after a failed attempt."""

    restart: bool
    counts_towards_max: bool
    reason: str
    message: str


def exit_code_of(returncode: int) -> int:
    """A subprocess return code as the kubelet reports it (signal N → 128+N)."""
    return 128 - returncode if returncode < 0 else returncode


def pod_failure_action(failure: RankExit, rules: tuple[PodFailureRule, ...]) -> tuple[str, int | None]:
    """(action, rule index) of the first podFailurePolicy rule matching the failure; Count if none."""
    for index, rule in enumerate(rules):
        if rule.on_exit_codes is not None and rule.on_exit_codes.matches(failure.container, failure.exit_code):
            return rule.action, index
    return "Count", None


def _rule_matches(rule: JobSetFailureRule, job: str, reason: str, message: str) -> bool:
    if rule.target_replicated_jobs and job not in rule.target_replicated_jobs:
        return False
    if rule.on_job_failure_reasons and reason not in rule.on_job_failure_reasons:
        return False
    return not rule.on_job_failure_message_patterns or any(
        re.search(pattern, message) for pattern in rule.on_job_failure_message_patterns
    )


def decide(
    failure: RankExit,
    pod_rules: tuple[PodFailureRule, ...],
    policy: FailurePolicy | None,
    restarts_counted: int,
) -> Decision:
    """Restart or fail, and with which reason, after ``failure`` ended an attempt."""
    what = f"{failure.label} exited with code {failure.exit_code}"
    if failure.detail:
        what += f" ({failure.detail})"
    action, index = pod_failure_action(failure, pod_rules)
    if action == "Ignore":
        return Decision(
            restart=True,
            counts_towards_max=False,
            reason="PodFailureIgnored",
            message=f"{what}, ignored by podFailurePolicy rule {index}; restarting all ranks",
        )
    if action == "FailJob":
        job_reason = REASON_POD_FAILURE_POLICY
        job_message = (
            f"Container {failure.container} for pod {failure.label} failed with exit code "
            f"{failure.exit_code} matching FailJob rule at index {index}"
            + (f" ({failure.detail})" if failure.detail else "")
        )
    else:
        job_reason = REASON_BACKOFF_LIMIT
        job_message = f"Job has reached the specified backoff limit: {what}"
    if policy is None:
        return Decision(False, False, "FailedJobs", f"jobset failed due to one or more job failures: {job_message}")
    rule = next((r for r in policy.rules if _rule_matches(r, failure.replicated_job, job_reason, job_message)), None)
    jobset_action = rule.action if rule is not None else "RestartJobSet"
    if jobset_action == "FailJobSet":
        return Decision(
            False,
            False,
            "FailJobSetFailurePolicyAction",
            f"applying FailJobSet failure policy action (rule {rule.name if rule else '-'}): {job_message}",
        )
    if jobset_action in ("RestartJobSetAndIgnoreMaxRestarts", "RestartJobAndIgnoreMaxRestarts"):
        return Decision(True, False, "RestartingJobSet", f"{job_message}; restart not counted ({jobset_action})")
    if restarts_counted >= policy.max_restarts:
        return Decision(
            False,
            False,
            "ReachedMaxRestarts",
            f"jobset failed due to reaching max number of restarts ({policy.max_restarts}): {job_message}",
        )
    return Decision(
        True,
        True,
        "RestartingJobSet",
        f"{job_message}; restart {restarts_counted + 1} of {policy.max_restarts}",
    )
