"""The executable tunes the collector for large heaps; calibration still runs under Python's defaults."""

from __future__ import annotations

import gc
import subprocess
import sys

from trainyard.gc_tuning import LARGE_HEAP_THRESHOLDS, python_default_collection


def test_the_trainyard_executable_runs_with_the_large_heap_thresholds() -> None:
    probe = (
        "import gc, sys; from trainyard.cli import main as cli;"
        "cli.main = lambda argv=None: print(gc.get_threshold()) or 0;"
        "sys.exit(cli.console())"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == str(LARGE_HEAP_THRESHOLDS)


def test_calibration_is_timed_under_pythons_own_thresholds_and_the_tuning_comes_back() -> None:
    saved = gc.get_threshold()
    gc.set_threshold(*LARGE_HEAP_THRESHOLDS)
    try:
        with python_default_collection():
            assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_threshold() == LARGE_HEAP_THRESHOLDS
    finally:
        gc.set_threshold(*saved)
