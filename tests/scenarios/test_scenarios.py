"""Table-driven admission scenarios: one Kueue rule per YAML file, the expected outcome beside it.

Each ``<rule>.yaml`` holds plain Kueue objects and Workloads, loadable by ``trainyard admit``;
``<rule>.expected.yaml`` says, for every workload in it, what Kueue would decide. The runner goes
through the same code path as ``trainyard admit FILE --output json`` and compares field by field.

Every scenario also runs with one admission per ClusterQueue per cycle (Kueue's own loop): the
engine's several-per-cycle mode must give the same outcome.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.k8s.quantity import parse_quantity
from trainyard.cli.admit.command import admit

HERE = Path(__file__).resolve().parent
STATUSES = {"Admitted", "Pending", "Preempted", "Inadmissible", "Finished"}
PREEMPTION_REASONS = {"InClusterQueue", "InCohortReclamation", "InCohortReclaimWhileBorrowing", "InCohortFairSharing"}
WORKLOAD_FIELDS = {"status", "clusterQueue", "flavors", "borrowed", "reasonContains", "counts"}


@dataclass(frozen=True)
class Scenario:
    rule: str
    objects: Path
    expected: dict[str, Any]
    one_per_cycle: bool


def _load_expected(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path}: expected a mapping with description/expect"
    unknown = set(data) - {"description", "config", "expect", "preempted", "clusterQueues", "xfail"}
    assert not unknown, f"{path}: unknown top-level keys {sorted(unknown)}"
    assert data.get("description"), f"{path}: say the rule under test in `description:`"
    assert isinstance(data.get("expect"), dict), f"{path}: `expect:` must map ns/name to outcomes"
    assert data["expect"], f"{path}: `expect:` is empty"
    for key, outcome in data["expect"].items():
        assert set(outcome) <= WORKLOAD_FIELDS, (
            f"{path}: {key}: unknown fields {sorted(set(outcome) - WORKLOAD_FIELDS)}"
        )
        assert outcome.get("status") in STATUSES, f"{path}: {key}: status must be one of {sorted(STATUSES)}"
    for victim, preemption in (data.get("preempted") or {}).items():
        assert preemption.get("reason") in PREEMPTION_REASONS, f"{path}: preempted {victim}: bad reason"
        assert preemption.get("by"), f"{path}: preempted {victim}: name the preemptor in `by:`"
    return data


def _scenarios() -> list[Any]:
    params: list[Any] = []
    for expected_path in sorted(HERE.glob("*.expected.yaml")):
        rule = expected_path.name.removesuffix(".expected.yaml")
        objects = HERE / f"{rule}.yaml"
        assert objects.is_file(), f"{expected_path} has no {objects.name} beside it"
        expected = _load_expected(expected_path)
        config = expected.get("config") or {}
        modes = [bool(config["onePerCycle"])] if "onePerCycle" in config else [False, True]
        for one_per_cycle in modes:
            marks = []
            if expected.get("xfail"):
                marks.append(pytest.mark.xfail(strict=True, reason=f"engine bug: {expected['xfail']}"))
            params.append(
                pytest.param(
                    Scenario(rule, objects, expected, one_per_cycle),
                    id=rule + ("" if len(modes) == 1 or not one_per_cycle else "[one-per-cycle]"),
                    marks=marks,
                )
            )
    return params


def _same_quantity(left: Any, right: Any) -> bool:
    return parse_quantity(str(left)) == parse_quantity(str(right))


def _compare_amounts(what: str, expected: dict[str, dict[str, Any]], actual: dict[str, dict[str, str]]) -> list[str]:
    """Nested {flavor: {resource: quantity}} compared numerically; zero amounts may be omitted."""
    problems: list[str] = []
    flat_expected = {(f, r): q for f, amounts in expected.items() for r, q in amounts.items()}
    flat_actual = {(f, r): q for f, amounts in actual.items() for r, q in amounts.items()}
    for fr in sorted(set(flat_expected) | set(flat_actual)):
        want, got = flat_expected.get(fr, "0"), flat_actual.get(fr, "0")
        if not _same_quantity(want, got):
            problems.append(f"{what} {fr[0]}/{fr[1]}: expected {want}, got {got}")
    return problems


def run_scenario(objects: Path, *, fair_sharing: bool, one_per_cycle: bool) -> dict[str, Any]:
    args = argparse.Namespace(
        paths=[str(objects)], output="json", fair_sharing=fair_sharing, one_per_cycle=one_per_cycle
    )
    return admit(args)


@pytest.mark.parametrize("scenario", _scenarios())
def test_scenario(scenario: Scenario) -> None:
    config = scenario.expected.get("config") or {}
    summary = run_scenario(
        scenario.objects, fair_sharing=bool(config.get("fairSharing")), one_per_cycle=scenario.one_per_cycle
    )
    workloads = {f"{w['namespace']}/{w['name']}": w for w in summary["workloads"]}
    expect: dict[str, dict[str, Any]] = scenario.expected["expect"]
    problems: list[str] = []
    missing = sorted(set(workloads) - set(expect))
    if missing:
        problems.append(f"workloads without an expectation (list them all): {missing}")
    for key, want in expect.items():
        got = workloads.get(key)
        if got is None:
            problems.append(f"{key}: not in the output (is it in {scenario.objects.name}?)")
            continue
        where = f"{key} [{got['status']}, reason: {got['reason']!r}]"
        if got["status"] != want["status"]:
            problems.append(f"{where}: status expected {want['status']}, got {got['status']}")
        if "clusterQueue" in want and got["clusterQueue"] != want["clusterQueue"]:
            problems.append(f"{where}: clusterQueue expected {want['clusterQueue']}, got {got['clusterQueue']}")
        if "flavors" in want and got["flavors"] != want["flavors"]:
            problems.append(f"{where}: flavors expected {want['flavors']}, got {got['flavors']}")
        if "borrowed" in want:
            problems.extend(
                f"{where}: {p}" for p in _compare_amounts("borrowed", want["borrowed"], got.get("borrowed", {}))
            )
        if "counts" in want and got.get("counts") != want["counts"]:
            problems.append(f"{where}: pod set counts expected {want['counts']}, got {got.get('counts')}")
        if "reasonContains" in want and want["reasonContains"] not in (got["reason"] or ""):
            problems.append(f"{where}: reason should contain {want['reasonContains']!r}")
    actual_preemptions = {
        victim["workload"]: {"by": f"{w['namespace']}/{w['name']}", "reason": victim["reason"]}
        for w in summary["workloads"]
        for victim in w.get("preempted", [])
    }
    expected_preemptions = scenario.expected.get("preempted") or {}
    for victim in sorted(set(expected_preemptions) | set(actual_preemptions)):
        want_p, got_p = expected_preemptions.get(victim), actual_preemptions.get(victim)
        if want_p != got_p:
            problems.append(f"preemption of {victim}: expected {want_p}, got {got_p}")
    queues = {q["name"]: q for q in summary["clusterQueues"]}
    for name, want_q in (scenario.expected.get("clusterQueues") or {}).items():
        got_q = queues.get(name)
        if got_q is None:
            problems.append(f"ClusterQueue {name}: not in the output")
            continue
        if "usage" in want_q:
            problems.extend(_compare_amounts(f"ClusterQueue {name} usage", want_q["usage"], got_q["usage"]))
        for count in ("admitted", "pending"):
            if count in want_q and got_q[count] != want_q[count]:
                problems.append(f"ClusterQueue {name}: {count} expected {want_q[count]}, got {got_q[count]}")
    mode = "one per cycle" if scenario.one_per_cycle else "several per cycle"
    assert not problems, f"{scenario.rule} ({mode}): {scenario.expected['description']}\n  " + "\n  ".join(problems)


def test_every_scenario_loads_with_the_cli_loader() -> None:
    """The YAML beside each expectation is plain Kueue input: `trainyard admit` reads it unchanged."""
    from scheduler.api.loading import load_kueue_objects

    rules = sorted(p.name.removesuffix(".expected.yaml") for p in HERE.glob("*.expected.yaml"))
    assert len(rules) >= 30, f"expected a scenario per engine rule, found {len(rules)}"
    for rule in rules:
        loaded = load_kueue_objects([HERE / f"{rule}.yaml"])
        assert loaded.workloads, f"{rule}.yaml holds no Workload"
        assert not loaded.skipped, f"{rule}.yaml has documents the loader skips: {loaded.skipped}"
