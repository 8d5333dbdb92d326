"""Every file of Kueue's own examples (kueue*/ of the upstream folder, ``anchors.py``) through `trainyard admit`.

The expectation table ``kueue_expectations.yaml`` has one entry per file: ``{file, command: admit,
with, expect, contains, figures, why}``. ``with`` lists the sample's documented setup files, given
together with it. ``accepted`` is exit 0 with the report's counts equal to ``figures``;
``refused`` is exit 2 with a message (never a traceback). ``contains`` are words the output
(report and notes) must hold. The commands run in-process through the CLI's ``main``.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from anchors import UPSTREAM, needs_upstream

from trainyard.cli.main import main

TABLE = Path(__file__).parent / "kueue_expectations.yaml"
KUEUE_DIRS = ("kueue", "kueue@v0.14.8", "kueue@v0.13.10")
STATUSES = ("Admitted", "QuotaReserved", "Pending", "Inadmissible", "Deactivated")

pytestmark = needs_upstream


def load_table() -> list[dict[str, Any]]:
    entries = yaml.safe_load(TABLE.read_text(encoding="utf-8")) or []
    assert isinstance(entries, list), f"{TABLE}: must be a YAML list of expectations"
    return entries


def kueue_files() -> set[str]:
    return {str(p.relative_to(UPSTREAM)) for d in KUEUE_DIRS for p in (UPSTREAM / d).rglob("*") if p.is_file()}


def figures_of(report: dict[str, Any]) -> dict[str, int]:
    """The counts an entry's ``figures`` give: workloads by status, ClusterQueues, inactive ones."""
    statuses = [workload["status"] for workload in report["workloads"]]
    figures = {
        "workloads": len(statuses),
        "clusterQueues": len(report["clusterQueues"]),
        "inactiveClusterQueues": sum(1 for queue in report["clusterQueues"] if not queue["active"]),
    }
    for status in STATUSES:
        figures[status[0].lower() + status[1:]] = statuses.count(status)
    return figures


def run_admit(paths: list[Path]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["admit", *[str(path) for path in paths], "-o", "json"])
    return code, out.getvalue(), err.getvalue()


def test_every_kueue_file_has_one_expectation() -> None:
    named = [entry["file"] for entry in load_table()]
    duplicates = sorted({name for name in named if named.count(name) > 1})
    assert not duplicates, f"files listed twice in {TABLE.name}: {duplicates}"
    missing = sorted(kueue_files() - set(named))
    assert not missing, f"Kueue files without an expectation in {TABLE.name}: {missing}"
    stale = sorted(set(named) - kueue_files())
    assert not stale, f"expectations for files that are not in {UPSTREAM}: {stale}"


def test_every_refusal_says_why_and_accepted_files_have_figures() -> None:
    for entry in load_table():
        assert entry["command"] == "admit", entry["file"]
        assert entry.get("why"), f"{entry['file']}: an expectation says why"
        if entry["expect"] == "refused":
            assert entry.get("contains"), f"{entry['file']}: a refusal names the words of its message"
        else:
            assert entry["expect"] == "accepted", entry["file"]
            assert entry.get("figures"), f"{entry['file']}: an accepted file has figures"


@pytest.mark.parametrize("entry", load_table() if TABLE.exists() else [], ids=lambda entry: str(entry.get("file")))
def test_kueue_file(entry: dict[str, Any]) -> None:
    paths = [UPSTREAM / entry["file"], *(UPSTREAM / extra for extra in entry.get("with", []))]
    code, out, err = run_admit(paths)
    assert "Traceback" not in err, f"{entry['file']}: crashed:\n{err}"
    where = entry["file"]
    if entry["expect"] == "refused":
        assert code == 2, f"{where}: expected a refusal, got exit {code}\n{err[-2000:]}"
        assert err.strip(), f"{where}: refused without a message"
    else:
        assert code == 0, f"{where}: expected acceptance, got exit {code}\n{err[-2000:]}"
        actual = figures_of(json.loads(out))
        for key, want in (entry.get("figures") or {}).items():
            assert actual.get(key) == want, f"{where}: {key} is {actual.get(key)!r}, expected {want!r} ({actual})"
    text = out + err
    for words in entry.get("contains") or []:
        assert words in text, f"{where}: {words!r} not in the output:\n{text[-3000:]}"
    named = [words for words in entry.get("contains") or [] if "unknown field" in words]
    unknown = [line for line in err.splitlines() if "unknown field" in line and not any(w in line for w in named)]
    assert not unknown, f"{where}: fields of Kueue's API called unknown (name real mistakes in contains): {unknown}"
