"""The benchmark harness: every figure carries this machine's calibration, measured as shared/tools does."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

from trainyard.benchmarks import calibration
from trainyard.cli.main import main

SHARED_CALIBRATE = Path(__file__).resolve().parents[3] / "shared" / "tools" / "calibrate.py"


def test_the_calibration_workload_is_a_fixed_amount_of_work() -> None:
    assert calibration._work() == 50_000  # every key of randrange(50_000) drawn in 600,000 draws


@pytest.mark.skipif(not SHARED_CALIBRATE.is_file(), reason="no ../shared/tools/calibrate.py next to this checkout")
def test_the_calibration_workload_is_the_shared_tools_one() -> None:
    shared = ast.parse(SHARED_CALIBRATE.read_text())
    work = next(n for n in shared.body if isinstance(n, ast.FunctionDef) and n.name == "work")
    ours = ast.parse(inspect.getsource(calibration._work)).body[0]
    assert isinstance(ours, ast.FunctionDef)
    assert [ast.dump(s) for s in ours.body] == [ast.dump(s) for s in work.body]


@pytest.mark.slow
def test_bench_prints_calibration_seconds_with_the_figures(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "placement", "--allow-pure", "--zones", "1", "--spines", "1", "--blocks", "2", "--hosts", "8"]
    assert main([*argv, "--repetitions", "2"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["nodes"] == 16
    assert 0 < figures["calibration_s"] < 60
    trainyard = [c for c in figures["cases"] if c["policy"] == "trainyard" and c["pods"] == 8]
    assert trainyard
    assert trainyard[0]["p99_ms"] > 0
