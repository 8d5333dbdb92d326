"""`bench parity --record/--replay`: Kueue's side kept in a file, the engine held to it again without a cluster."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from trainyard.benchmarks.parity import _steps, replay_engine, replay_input, replay_recordings
from trainyard.benchmarks.parity_inputs import ParityInput, scenario_input
from trainyard.benchmarks.parity_recording import KueueRecording
from trainyard.benchmarks.parity_sides import Decision, SideRecord

WORKLOADS = 120


def _input() -> ParityInput:
    args = argparse.Namespace(scenario="kueue-baseline", workloads=WORKLOADS, seed=1, step_seconds=0.5, objects=None)
    return scenario_input(args)


def _engine_as_kueue(parity: ParityInput) -> KueueRecording:
    """A recording whose Kueue decided exactly as the engine does: creation times one second
    per step, as the runner creates them, and a step clock to match."""
    created = {}
    for index, batch in enumerate(parity.steps):
        for document in batch:
            created[f"{document['metadata']['namespace']}/{document['metadata']['name']}"] = (
                f"2026-11-28T00:{index // 60:02d}:{index % 60:02d}Z"
            )
    clock = [1_795_000_000.0 + index for index in range(len(_steps(parity)))]
    recording = KueueRecording(parity.name, len(parity.keys), created, clock, SideRecord())
    recording.record = replay_engine(_input(), recording)
    return recording


def test_a_recording_round_trips_through_its_file(tmp_path: Path) -> None:
    recording = _engine_as_kueue(_input())
    path = tmp_path / "kueue.json"

    recording.save(path)
    loaded = KueueRecording.load(path)

    assert loaded.created == recording.created
    assert loaded.step_clock == recording.step_clock
    assert loaded.record.decisions == recording.record.decisions
    assert loaded.record.admission_order == recording.record.admission_order
    assert loaded.record.waiting == recording.record.waiting


def test_the_engine_replayed_against_its_own_decisions_agrees_fully(tmp_path: Path) -> None:
    path = tmp_path / "kueue.json"
    _engine_as_kueue(_input()).save(path)

    result = replay_input(_input(), KueueRecording.load(path))

    assert result["workloads"] == WORKLOADS
    assert result["admissions"]["kueue"] > 0
    assert (result["decisions_equal_pct"], result["order_equal_pct"]) == (100.0, 100.0)


def test_a_decision_kueue_took_otherwise_is_a_difference_naming_the_workload(tmp_path: Path) -> None:
    recording = _engine_as_kueue(_input())
    key = recording.record.admission_order[0]
    first = recording.record.decisions[key][0]
    recording.record.decisions[key][0] = Decision(first.step, "admitted", first.cluster_queue, (("cpu", "other"),))
    path = tmp_path / "kueue.json"
    recording.save(path)

    result = replay_input(_input(), KueueRecording.load(path))

    assert result["decisions_equal_pct"] == round(100.0 * (WORKLOADS - 1) / WORKLOADS, 2)
    assert [d["workload"] for d in result["differences"]] == [key]
    assert result["differences"][0]["kueue"]["flavors"] == {"cpu": "other"}


def test_two_recordings_also_hold_kueue_to_itself(tmp_path: Path) -> None:
    recording = _engine_as_kueue(_input())
    same, other = tmp_path / "same.json", tmp_path / "other.json"
    recording.save(same)
    key = recording.record.admission_order[-1]
    recording.record.decisions[key] = []  # this run of Kueue never admitted it
    recording.save(other)

    result = replay_recordings(_input(), [same, other])

    against_same, against_other = result["engine_against_kueue"]
    assert against_same["decisions_equal_pct"] == 100.0
    assert against_other["differences_total"] == 1
    (itself,) = result["kueue_against_itself"]
    assert itself["differences_total"] == 1
    assert itself["decisions_equal_pct"] < 100.0
    # the one workload Kueue's runs disagree on is left out; on the rest the engine matches both
    settled = result["where_kueue_agrees_with_itself"]
    assert settled["workloads"] == WORKLOADS - 1
    assert settled["decisions_equal_pct"] == [100.0, 100.0]


def test_where_kueue_agrees_with_itself_the_engine_is_held_to_every_run(tmp_path: Path) -> None:
    recording = _engine_as_kueue(_input())
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    key = recording.record.admission_order[0]
    decision = recording.record.decisions[key][0]
    other_flavor = Decision(decision.step, "admitted", decision.cluster_queue, (("cpu", "other"),))
    recording.record.decisions[key][0] = other_flavor  # both runs of Kueue chose another flavor
    recording.save(first)
    recording.save(second)

    settled = replay_recordings(_input(), [first, second])["where_kueue_agrees_with_itself"]

    assert settled["workloads"] == WORKLOADS
    assert settled["decisions_equal_pct"] == [round(100.0 * (WORKLOADS - 1) / WORKLOADS, 2)] * 2


def test_a_recording_of_another_input_is_refused_naming_both(tmp_path: Path) -> None:
    recording = _engine_as_kueue(_input())
    recording.workloads = 3000
    path = tmp_path / "kueue.json"
    recording.save(path)

    with pytest.raises(SystemExit, match=r"recorded kueue-baseline with 3000 Workloads, not kueue-baseline with 120"):
        replay_recordings(_input(), [path])


def test_a_file_that_is_not_a_recording_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"workloads": 3}))

    with pytest.raises(SystemExit, match=r"not a recording made by --record"):
        KueueRecording.load(path)
