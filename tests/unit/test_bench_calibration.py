"""Every benchmark's JSON carries this machine's calibration seconds."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from trainyard.benchmarks.calibration import calibration_seconds
from trainyard.cli import bench


class _TinyBenchmark:
    def configure(self, parser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> dict[str, Any]:
        return {"figure": 1}


def test_calibration_is_a_positive_cpu_time() -> None:
    seconds = calibration_seconds(runs=1)
    assert 0.0 < seconds < 60.0


def test_bench_output_carries_calibration(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench, "_load", lambda name: _TinyBenchmark())
    monkeypatch.setattr("trainyard.benchmarks.calibration.calibration_seconds", lambda runs=3: 0.5)
    assert bench.run(argparse.Namespace(benchmark="tiny", allow_pure=True)) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"figure": 1, "calibration_s": 0.5}
