"""A run's collector settings are its own: the caller's thresholds and freeze come back."""

from __future__ import annotations

import gc

import pytest

from simulations.gc_settings import RUN_THRESHOLDS, batch_collector


def test_run_settings_apply_inside_and_are_restored_after_an_error() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    seen: list[tuple[tuple[int, int, int], int]] = []

    def failing_run() -> None:
        with batch_collector():
            seen.append((gc.get_threshold(), gc.get_freeze_count()))
            raise RuntimeError("a run that fails")

    with pytest.raises(RuntimeError):
        failing_run()
    assert seen[0][0] == RUN_THRESHOLDS
    assert seen[0][1] > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


def test_a_callers_own_freeze_is_kept() -> None:
    gc.freeze()
    try:
        with batch_collector():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
