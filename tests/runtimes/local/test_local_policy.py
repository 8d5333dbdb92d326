"""podFailurePolicy then JobSet failurePolicy: the decisions the local launcher takes after a failure."""

from __future__ import annotations

import pytest

from runtimes.local.plan import ExitCodeMatch, FailurePolicy, JobSetFailureRule, PodFailureRule
from runtimes.local.policy import RankExit, decide, exit_code_of, pod_failure_action

FAIL_ON_2 = PodFailureRule("FailJob", ExitCodeMatch("In", (2,), "node"))
IGNORE_42 = PodFailureRule("Ignore", ExitCodeMatch("In", (42,)))
ON_CONDITION = PodFailureRule("Ignore", None)  # onPodConditions: never matches a process exit
FAIL_JOBSET_ON_POLICY = JobSetFailureRule("fail", "FailJobSet", on_job_failure_reasons=("PodFailurePolicy",))


def rank_exit(code: int, job: str = "node", container: str = "node") -> RankExit:
    return RankExit("node-1/rank-3", job, container, code)


@pytest.mark.parametrize(
    ("code", "rules", "action"),
    [
        (2, (ON_CONDITION, FAIL_ON_2), "FailJob"),
        (42, (FAIL_ON_2, IGNORE_42), "Ignore"),
        (1, (FAIL_ON_2, IGNORE_42), "Count"),
        (7, (PodFailureRule("FailJob", ExitCodeMatch("NotIn", (0, 1))),), "FailJob"),
        (1, (PodFailureRule("FailJob", ExitCodeMatch("NotIn", (0, 1))),), "Count"),
    ],
    ids=["first-match-after-condition-rule", "ignore-in", "no-match-counts", "notin-matches", "notin-excluded"],
)
def test_pod_failure_policy_first_matching_rule(code: int, rules: tuple[PodFailureRule, ...], action: str) -> None:
    assert pod_failure_action(rank_exit(code), rules)[0] == action


def test_exit_code_rule_respects_container_name() -> None:
    assert pod_failure_action(rank_exit(2, container="sidecar"), (FAIL_ON_2,))[0] == "Count"


def test_signal_exit_reported_as_128_plus_signal() -> None:
    assert exit_code_of(-9) == 137
    assert exit_code_of(3) == 3


@pytest.mark.parametrize(
    ("code", "policy", "counted", "restart", "counts", "reason"),
    [
        (1, None, 0, False, False, "FailedJobs"),
        (1, FailurePolicy(1), 0, True, True, "RestartingJobSet"),
        (1, FailurePolicy(1), 1, False, False, "ReachedMaxRestarts"),
        (2, FailurePolicy(3, (FAIL_JOBSET_ON_POLICY,)), 0, False, False, "FailJobSetFailurePolicyAction"),
        (2, FailurePolicy(3), 0, True, True, "RestartingJobSet"),
        (42, FailurePolicy(0), 0, True, False, "PodFailureIgnored"),
        (
            1,
            FailurePolicy(0, (JobSetFailureRule("r", "RestartJobSetAndIgnoreMaxRestarts"),)),
            5,
            True,
            False,
            "RestartingJobSet",
        ),
        (1, FailurePolicy(2, (FAIL_JOBSET_ON_POLICY,)), 0, True, True, "RestartingJobSet"),
    ],
    ids=[
        "no-policy-fails",
        "restart-counted",
        "max-restarts-reached",
        "failjob-then-failjobset-rule",
        "failjob-without-rule-restarts",
        "ignore-not-counted",
        "ignore-max-restarts-action",
        "rule-reason-mismatch-falls-back-to-restart",
    ],
)
def test_jobset_failure_policy(
    code: int, policy: FailurePolicy | None, counted: int, restart: bool, counts: bool, reason: str
) -> None:
    decision = decide(rank_exit(code), (FAIL_ON_2, IGNORE_42), policy, counted)
    assert (decision.restart, decision.counts_towards_max, decision.reason) == (restart, counts, reason)
    assert "node-1/rank-3" in decision.message
    assert f"exit code {code}" in decision.message or f"exited with code {code}" in decision.message


def test_rule_targets_and_message_patterns() -> None:
    targeted = JobSetFailureRule("t", "FailJobSet", target_replicated_jobs=("dataset-initializer",))
    patterned = JobSetFailureRule("p", "FailJobSet", on_job_failure_message_patterns=("offline",))
    policy = FailurePolicy(3, (targeted, patterned))
    assert decide(rank_exit(1), (), policy, 0).restart
    assert not decide(rank_exit(1, job="dataset-initializer"), (), policy, 0).restart
    offline = RankExit("dataset-initializer", "dataset-initializer", "dataset-initializer", 3, "offline?")
    assert decide(offline, (), FailurePolicy(3, (patterned,)), 0).reason == "FailJobSetFailurePolicyAction"
