"""The pure queries over the fixture queues: summaries, pending order, describe, quota plans."""

from __future__ import annotations

import pytest

from scheduler.api.kueue import ClusterQueue
from scheduler.queues import (
    QuotaChange,
    QuotaChangeError,
    cluster_queue_summaries,
    cohort_summaries,
    describe_workload,
    pending_workloads,
    plan_quota_change,
    reload_with,
)
from tests.queues.support import fixture_state


def test_summaries_report_quota_usage_borrowing_and_lending() -> None:
    state = fixture_state()
    by_name = {s.name: s for s in cluster_queue_summaries(state)}
    team_a = {(line.flavor, line.resource): line for line in by_name["team-a"].resources}
    h100 = team_a[("h100", "nvidia.com/gpu")]
    # a-urgent (12 GPUs, high priority) is admitted by the evaluation: 8 nominal + 4 borrowed
    assert (h100.nominal, h100.usage, h100.borrowed, h100.borrowing_limit) == (8, 12, 4, 4)
    b = by_name["team-b"].resources[0]
    assert (b.usage, b.lending_limit, b.lent) == (4, 4, 4)
    assert by_name["team-a"].admitted == 1
    assert by_name["team-a"].pending == 3
    assert state.admitted_now == ["team-a/a-urgent"]


def test_inactive_and_invalid_queues_are_flagged_with_why() -> None:
    by_name = {s.name: s for s in cluster_queue_summaries(fixture_state())}
    assert "stopPolicy is Hold" in (by_name["stopped"].inactive_reason or "")
    assert "FlavorNotFound" in (by_name["broken"].inactive_reason or "")
    assert by_name["team-a"].flags == []


def test_a_quota_the_webhook_would_refuse_is_flagged_invalid() -> None:
    # Files are checked when read; a cluster without the webhook can still hold such a queue.
    state = fixture_state()
    broken = ClusterQueue.model_validate(
        {
            "metadata": {"name": "team-c"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "a100", "resources": [{"name": "cpu", "nominalQuota": "10", "lendingLimit": "20"}]}
                        ],
                    }
                ],
            },
        }
    )
    state = reload_with(state, [broken])
    (summary,) = cluster_queue_summaries(state, name_contains="team-c")
    assert summary.active
    assert any("lendingLimit" in problem and "cohort is empty" in problem for problem in summary.invalid)
    assert any(flag.startswith("invalid: ") for flag in summary.flags)


def test_filters_and_cohort_tree() -> None:
    state = fixture_state()
    assert [s.name for s in cluster_queue_summaries(state, cohort="research")] == ["team-a", "team-b"]
    assert [s.name for s in cluster_queue_summaries(state, inactive_only=True)] == ["broken", "stopped"]
    (research,) = cohort_summaries(state)
    assert research.cluster_queues == ["team-a", "team-b"]
    assert research.resources[0].nominal == 4


def test_pending_in_admission_order_with_both_positions() -> None:
    entries = pending_workloads(fixture_state(), cluster_queue="team-a")
    assert [(e.name, e.position_in_cluster_queue, e.position_in_local_queue) for e in entries] == [
        ("a-first", 0, 0),
        ("a-big", 1, 1),
        ("a-other", 2, 0),
    ]
    assert entries[1].requests == {"nvidia.com/gpu": "16"}
    assert "can reach 12" in entries[1].reason


def test_pending_of_one_local_queue_and_workloads_outside_any_queue() -> None:
    state = fixture_state()
    other = pending_workloads(state, namespace="team-a", local_queue="other")
    assert [(e.name, e.position_in_cluster_queue, e.position_in_local_queue) for e in other] == [("a-other", 2, 0)]
    lost = pending_workloads(state, namespace="team-c")
    assert [(e.name, e.state, e.position_in_cluster_queue) for e in lost] == [("lost", "Inadmissible", None)]
    assert "LocalQueue nowhere" in lost[0].reason


def test_describe_tells_each_flavor_and_the_preemption_policy() -> None:
    story = describe_workload(fixture_state(), "team-a/a-first")
    assert story is not None
    assert story.explanation is not None
    verdicts = {v.flavor: v for v in story.explanation.flavors}
    assert verdicts["h100"].mode == "NoCandidates"
    assert verdicts["h100"].chosen
    assert verdicts["a100"].mode == "NoFit"
    assert "can reach 0" in verdicts["a100"].reasons[0]
    assert story.explanation.preemption.needed
    assert story.explanation.borrowing == {"h100": {"nvidia.com/gpu": "8"}}
    assert story.pending is not None
    assert story.pending.position_in_cluster_queue == 0


def test_describe_of_an_admitted_workload() -> None:
    story = describe_workload(fixture_state(), "team-a/a-urgent")
    assert story is not None
    assert story.status == "Admitted"
    assert story.admitted_by_evaluation
    assert story.admission is not None
    assert story.admission["flavors"] == {"nvidia.com/gpu": "h100"}


def test_quota_plan_shows_what_would_be_admitted() -> None:
    plan = plan_quota_change(fixture_state(), QuotaChange("team-a", "h100", "nvidia.com/gpu", "16"))
    assert not plan.errors
    assert plan.effect is not None
    assert plan.before["nominalQuota"] == "8"
    assert plan.after["nominalQuota"] == "16"
    assert "team-a/a-first" in plan.effect.admitted
    assert plan.effect.pending_after < plan.effect.pending_before


def test_quota_plan_lowering_quota_makes_workloads_preemptible() -> None:
    plan = plan_quota_change(fixture_state(), QuotaChange("team-b", "h100", "nvidia.com/gpu", "2", lending_limit="2"))
    assert plan.effect is not None
    assert plan.effect.newly_borrowing == ["team-b/b-running"]


def test_invalid_quota_is_refused_with_kueue_rules() -> None:
    plan = plan_quota_change(fixture_state(), QuotaChange("team-b", "h100", "nvidia.com/gpu", "8", lending_limit="9"))
    assert plan.effect is None
    assert any("lendingLimit" in e.path and "less than or equal" in e.message for e in plan.errors)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (QuotaChange("nope", "h100", "nvidia.com/gpu", "1"), "does not exist"),
        (QuotaChange("team-a", "v100", "nvidia.com/gpu", "1"), "no flavor 'v100'"),
        (QuotaChange("team-a", "h100", "cpu", "1"), "no quota for resource 'cpu'"),
        (QuotaChange("team-a", "h100", "nvidia.com/gpu", "lots"), "not a Kubernetes quantity"),
    ],
    ids=["unknown-queue", "unknown-flavor", "uncovered-resource", "bad-quantity"],
)
def test_quota_change_names_what_is_wrong(change: QuotaChange, words: str) -> None:
    with pytest.raises(QuotaChangeError, match=words):
        plan_quota_change(fixture_state(), change)
