"""`trainyard simulate --compare-policies`: one scenario, the same engine, only the placement policy differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainyard.cli.main import main


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: small\ncluster: {spinesPerZone: 1, blocksPerSpine: 2, nodesPerBlock: 4}\n"
        "teams:\n- {name: team-a, share: 0.6}\n- {name: team-b, share: 0.4}\n"
        "workload: {jobs: 40, mix: philly, load: 1.5, maxDurationSeconds: 3600}\n"
    )
    return path


def test_each_policy_runs_the_same_scenario_and_reports_allocation_and_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "--scenario", str(_scenario(tmp_path)), "--compare-policies", "trainyard", "first-fit", "fgd"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {row["policy"]: row for row in report["policies"]}
    assert list(rows) == ["trainyard", "first-fit", "fgd"]
    for row in rows.values():
        assert row["invariants_held"]
        assert 0 < row["mean_allocation"] <= 1
        assert row["team_a_p95_wait_seconds"] is not None
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "team-a" in printed
    assert "first-fit" in printed


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--compare-policies", "worst-fit"], "'worst-fit' is not a placement policy"),
        (["--compare-policies", "fgd", "--compare", "gpu-1k"], "leave out --compare"),
        (["--gpu-sharing"], "--gpu-sharing applies to --mode saturation"),
    ],
)
def test_bad_policy_options_are_refused_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: str
) -> None:
    assert main(["simulate", "--scenario", str(_scenario(tmp_path)), *extra]) == 2
    err = capsys.readouterr().err
    assert words in err
    assert "Traceback" not in err
