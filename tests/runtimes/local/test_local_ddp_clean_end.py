"""The example trainer ends cleanly: no nan from a restart past its last step, a diverged loss
fails the run, and the local-ddp sample runs again and again without a restart (issue 32)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from trainyard.benchmarks.local_repeat import judge_run
from trainyard.benchmarks.local_repeat import run as run_repeatedly

ROOT = Path(__file__).resolve().parents[3]
TRAINER = [sys.executable, "-m", "runtimes.examples.ddp_trainer"]


def train(*args: str) -> subprocess.CompletedProcess[str]:
    """One process, no process group: the trainer's own logic, quickly."""
    return subprocess.run([*TRAINER, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_a_restart_after_the_final_checkpoint_reports_its_loss_not_nan(tmp_path: Path) -> None:
    first = train("--steps=3", "--checkpoint-every=5", f"--output-dir={tmp_path}")
    assert first.returncode == 0, first.stderr
    finished = first.stdout.splitlines()[-1]
    assert finished.startswith("rank 0/1 finished step 3, loss ")
    # a restart (after a crash at shutdown) finds step 3 written: nothing to train, same loss
    again = train("--steps=3", "--checkpoint-every=5", f"--output-dir={tmp_path}")
    assert again.returncode == 0, again.stderr
    assert "the checkpoint already holds step 3; nothing left to train" in again.stdout
    assert again.stdout.splitlines()[-1] == finished
    assert "nan" not in again.stdout


def test_a_diverged_loss_fails_the_run(tmp_path: Path) -> None:
    diverged = train("--steps=40", "--learning-rate=50", f"--output-dir={tmp_path}")
    assert diverged.returncode == 3
    assert "training diverged" in diverged.stderr
    assert "the loss is inf" in diverged.stderr or "the loss is nan" in diverged.stderr
    assert "finished step" not in diverged.stdout


@pytest.mark.parametrize(
    ("output", "returncode", "problems"),
    [
        pytest.param(
            "[node-0/rank-0] rank 0/4 finished step 30, loss 0.136507\n"
            "TrainJob local-ddp: Complete (AllJobsCompleted) after 0 restart(s); status in x\n",
            0,
            [],
            id="clean",
        ),
        pytest.param(
            "[node-1/rank-3] terminate called without an active exception\n"
            "[node-1/rank-3] rank 3/4 finished step 30, loss nan\n"
            "TrainJob local-ddp: Complete (AllJobsCompleted) after 1 restart(s); status in x\n",
            0,
            [
                "1 restart(s)",
                "1 rank line(s) with nan, e.g. 'rank 3/4 finished step 30, loss nan'",
                "a rank died at shutdown: 'terminate called without an active exception'",
            ],
            id="the-reported-flake",
        ),
        pytest.param("TrainJob local-ddp: Failed (x) after 0 restart(s)\n", 1, ["ended Failed (exit 1)"], id="failed"),
    ],
)
def test_a_run_is_judged_by_its_ending_restarts_nan_and_crashes(
    output: str, returncode: int, problems: list[str]
) -> None:
    assert judge_run(output, returncode).problems == problems


@pytest.mark.slow
def test_the_local_ddp_sample_runs_twice_in_a_row_cleanly() -> None:
    """Two runs of the loop ``trainyard bench local-repeat`` runs twenty times (README figures)."""
    result = run_repeatedly(argparse.Namespace(runs=2))
    assert result["failures"] == []
    assert result["clean"] == 2
