"""KWOK Stage parsing, the jitter rule, selectors and the pod lifecycle over virtual time."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulations.errors import SimulationInputError
from simulations.kwok import (
    POD_COMPLETE_DELAY_ANNOTATION,
    POD_COMPLETE_JITTER_ANNOTATION,
    PodLifecycle,
    default_stages,
    draw_delay_ns,
    load_stages,
    parse_stage,
    simulated_pod,
)
from simulations.kwok.query import parse_go_duration, run_query
from simulations.yamlsource import load_documents

SECOND = 1_000_000_000


def stage_from(tmp_path: Path, text: str) -> list:  # type: ignore[type-arg]
    path = tmp_path / "stage.yaml"
    path.write_text(text)
    return load_stages([path])


@pytest.mark.parametrize(
    ("duration", "jitter", "low", "high"),
    [
        pytest.param(5 * SECOND, None, 5 * SECOND, 5 * SECOND, id="no-jitter-is-duration"),
        pytest.param(5 * SECOND, 3 * SECOND, 3 * SECOND, 3 * SECOND, id="jitter-below-duration-is-the-delay"),
        pytest.param(5 * SECOND, 5 * SECOND, 5 * SECOND, 5 * SECOND, id="jitter-equal-duration-is-exact"),
        pytest.param(2 * SECOND, 10 * SECOND, 2 * SECOND, 10 * SECOND - 1, id="jitter-above-duration-is-uniform"),
    ],
)
def test_kwok_jitter_rule(duration: int, jitter: int | None, low: int, high: int) -> None:
    rng = random.Random(7)
    draws = [draw_delay_ns(duration, jitter, rng) for _ in range(2000)]
    assert min(draws) >= low
    assert max(draws) <= high
    if low != high:
        assert max(draws) - min(draws) > (high - low) // 2  # really spread, not constant


def test_go_durations() -> None:
    assert parse_go_duration("1h30m") == 5400 * SECOND
    assert parse_go_duration("1.5s") == 1_500_000_000
    assert parse_go_duration("300ms") == 300_000_000
    assert parse_go_duration("0") == 0
    assert parse_go_duration("ten seconds") is None
    assert parse_go_duration("5") is None  # Go needs a unit


@given(st.integers(min_value=0, max_value=999_999_999))
def test_whole_milliseconds_read_as_the_general_parse_reads_them(milliseconds: int) -> None:
    """ "<n>ms" takes a shortcut past the regular expression; "<n>.0ms" still goes through it."""
    assert parse_go_duration(f"{milliseconds}ms") == parse_go_duration(f"{milliseconds}.0ms")
    assert parse_go_duration(f"{milliseconds}ms") == milliseconds * 1_000_000


def test_jq_subset_follows_gojq() -> None:
    pod = {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]}}
    assert run_query('.status.conditions.[] | select( .type == "Ready" ) | .status', pod) == ["True"]
    assert run_query('.metadata.annotations["a/b"]', pod) == [None]
    assert run_query(".metadata.ownerReferences.[].kind", pod) is None  # iterating null errors


def test_default_stages_drive_a_pod_to_success_after_its_annotated_duration() -> None:
    lifecycle = PodLifecycle(default_stages())
    pod = simulated_pod(
        "p", "ns", {}, {POD_COMPLETE_DELAY_ANNOTATION: "3600s", POD_COMPLETE_JITTER_ANNOTATION: "3600s"}
    )
    outcome = lifecycle.run_pod(pod, 0.0, random.Random(1))
    assert outcome.stages == ("pod-ready", "pod-complete")
    assert outcome.phase == "Succeeded"
    assert outcome.ready_after is not None
    assert 2.0 <= outcome.ready_after < 10.0  # pod-ready: 2 s + Int63n(8 s)
    assert outcome.finished_after == pytest.approx(outcome.ready_after + 3600.0)


def test_missing_delay_annotation_means_no_delay_as_in_kwok() -> None:
    lifecycle = PodLifecycle(default_stages())
    outcome = lifecycle.run_pod(simulated_pod("p", "ns", {}, {}), 0.0, random.Random(1))
    assert outcome.finished_after == outcome.ready_after


def test_gang_is_ready_when_its_last_pod_is_and_done_when_its_last_pod_is() -> None:
    lifecycle = PodLifecycle(default_stages())
    pod = simulated_pod("p", "ns", {}, {POD_COMPLETE_DELAY_ANNOTATION: "100s", POD_COMPLETE_JITTER_ANNOTATION: "100s"})
    rng = random.Random(3)
    singles = [lifecycle.run_pod(pod, 0.0, rng).ready_after or 0.0 for _ in range(64)]
    gang = lifecycle.run_gang(pod, 64, 0.0, random.Random(3))
    assert gang.succeeded
    assert gang.ready_after == pytest.approx(max(singles))
    assert gang.finished_after == pytest.approx(max(singles) + 100.0)


def test_pods_not_owned_by_a_job_never_complete_with_the_job_stage() -> None:
    lifecycle = PodLifecycle(default_stages())
    outcome = lifecycle.run_pod(simulated_pod("p", "ns", {}, {}, owner_kind="ReplicaSet"), 0.0, random.Random(1))
    assert outcome.phase == "Running"
    assert outcome.finished_after is None


def test_null_selector_matches_nothing_and_weights_pick_between_matches(tmp_path: Path) -> None:
    stages = stage_from(
        tmp_path,
        """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: never}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  next: {statusTemplate: "phase: Failed"}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: fail}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector: {matchExpressions: [{key: .status.phase, operator: In, values: [Pending]}]}
  weight: 1
  next: {statusTemplate: "phase: Failed"}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: succeed}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector: {matchExpressions: [{key: .status.phase, operator: In, values: [Pending]}]}
  weight: 3
  next: {statusTemplate: "phase: Succeeded"}
""",
    )
    lifecycle = PodLifecycle(stages)
    rng = random.Random(11)
    phases = [lifecycle.run_pod(simulated_pod("p", "ns", {}, {}), 0.0, rng).phase for _ in range(4000)]
    assert "never" not in {s.name for s in stages if s.matches({"status": {"phase": "Pending"}})}
    assert phases.count("Succeeded") / len(phases) == pytest.approx(0.75, abs=0.03)


@pytest.mark.parametrize(
    ("body", "line", "field"),
    [
        pytest.param(
            "  delay: {durationMilliseconds: fast}\n", 9, "spec.delay.durationMilliseconds", id="bad-duration"
        ),
        pytest.param(
            "  selector: {matchExpressions: [{key: .status.phase, operator: Maybe, values: [x]}]}\n",
            9,
            "spec.selector.matchExpressions[0].operator",
            id="bad-operator",
        ),
        pytest.param(
            "  selector: {matchExpressions: [{key: '.a | length', operator: Exists}]}\n",
            9,
            "spec.selector.matchExpressions[0].key",
            id="unsupported-jq",
        ),
    ],
)
def test_bad_stage_files_name_file_line_and_field(tmp_path: Path, body: str, line: int, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: bad\nspec:\n"
        "  resourceRef:\n    apiGroup: v1\n    kind: Pod\n" + body
    )
    with pytest.raises(SimulationInputError) as caught:
        load_stages([path])
    assert caught.value.file == str(path)
    assert caught.value.line == line
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{path}:{line}: {field}:")


def test_steps_form_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "v08.yaml"
    path.write_text(
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata: {name: s}\nspec:\n"
        "  resourceRef: {kind: Pod}\n  steps: []\n"
    )
    with pytest.raises(SimulationInputError, match="write the stage with `next`"):
        parse_stage(load_documents(path)[0])


def test_gangs_of_pods_a_selector_tells_apart_walk_their_own_chains(tmp_path: Path) -> None:
    """A selector on the pod's name or namespace: the chain found for one gang is not reused
    for a gang that the selector treats differently."""
    stages = stage_from(
        tmp_path,
        """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: fail-team-b}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .status.phase, operator: In, values: [Pending]}
    - {key: .metadata.namespace, operator: In, values: [team-b]}
  next: {statusTemplate: "phase: Failed"}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: succeed-others}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .status.phase, operator: In, values: [Pending]}
    - {key: .metadata.namespace, operator: NotIn, values: [team-b]}
  next: {statusTemplate: "phase: Succeeded"}
""",
    )
    for template in (None, "one template"):  # a template does not let the namespace be ignored
        lifecycle = PodLifecycle(stages)
        first = lifecycle.run_gang(simulated_pod("p", "team-a", {}, {}), 4, 0.0, random.Random(1), template=template)
        second = lifecycle.run_gang(simulated_pod("p", "team-b", {}, {}), 4, 0.0, random.Random(1), template=template)
        assert first.succeeded
        assert not second.succeeded


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param("matchAnnotations: {tier: gold}", id="match-annotations"),
        pytest.param(
            "matchExpressions: [{key: '.metadata.annotations[\"tier\"]', operator: In, values: [gold]}]",
            id="expression-on-one-annotation",
        ),
        pytest.param(
            "matchExpressions: [{key: .metadata.annotations.tier, operator: In, values: [gold]}]",
            id="expression-on-a-dotted-annotation",
        ),
    ],
)
def test_gangs_an_annotation_selector_tells_apart_walk_their_own_chains(tmp_path: Path, selector: str) -> None:
    """A selector on an annotation's value: pods that differ only in that value (same keys) are
    not given each other's chain, whichever walks first."""
    stages = stage_from(
        tmp_path,
        f"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {{name: gold-succeeds}}
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    {selector}
  next: {{statusTemplate: "phase: Succeeded"}}
""",
    )
    for (first_tier, second_tier), template in itertools.product((("gold", "silver"), ("silver", "gold")), (None, "t")):
        lifecycle = PodLifecycle(stages)
        first_pod = simulated_pod("p", "team-a", {}, {"tier": first_tier})
        second_pod = simulated_pod("p", "team-a", {}, {"tier": second_tier})
        first = lifecycle.run_gang(first_pod, 2, 0.0, random.Random(1), template=template)
        second = lifecycle.run_gang(second_pod, 2, 0.0, random.Random(1), template=template)
        assert first.succeeded == (first_tier == "gold")
        assert second.succeeded == (second_tier == "gold")


def test_a_template_shares_the_chain_its_pods_would_each_find() -> None:
    """With the default stages no selector reads a pod's name, namespace or annotation values:
    pods of one template walk the chain each would find alone, delays read from each pod."""
    by_pod, by_template = PodLifecycle(default_stages()), PodLifecycle(default_stages())
    for index, (team, seconds) in enumerate([("team-a", 30), ("team-b", 5), ("team-a", 7200), ("team-c", 1)]):
        delay = f"{seconds * 1000}ms"
        annotations = {POD_COMPLETE_DELAY_ANNOTATION: delay, POD_COMPLETE_JITTER_ANNOTATION: delay}
        pod = simulated_pod(f"job-{index}", team, {}, annotations)
        alone = by_pod.run_gang(pod, 3, 10.0, random.Random(index))
        shared = by_template.run_gang(pod, 3, 10.0, random.Random(index), template="job pods")
        assert (shared.ready_after, shared.finished_after, shared.succeeded) == (
            alone.ready_after,
            alone.finished_after,
            alone.succeeded,
        )
        assert shared.finished_after is not None
        assert shared.finished_after >= seconds  # the pod's own delay, not the first pod's
