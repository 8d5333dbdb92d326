"""`trainyard bench local-repeat`: the local-ddp sample run many times in a row, each judged.

Each run is exactly what a user types, ``trainyard run manifests/samples/trainjobs/local-ddp.yaml
--local`` (2 nodes x 2 ranks over gloo on the CPU), in a job directory of its own. A run is clean
when it ends Complete after 0 restarts, no rank printed a nan loss and no rank died at shutdown
(``terminate called``, exit 134). Prints how many of ``--runs`` were clean and, for any that was
not, why.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "samples" / "trainjobs" / "local-ddp.yaml"
_ENDING = re.compile(r"^TrainJob \S+: (Complete|Failed) \(([^)]*)\) after (\d+) restart\(s\)", re.MULTILINE)
_RANK_LINE = re.compile(r"^\[node-\d+/rank-\d+\] (.*)$", re.MULTILINE)


@dataclass(frozen=True)
class RunVerdict:
    """How one run ended, and what makes it not clean (empty: clean)."""

    state: str  # Complete | Failed | unknown
    restarts: int
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.problems


def judge_run(output: str, returncode: int) -> RunVerdict:
    """The verdict on one ``trainyard run --local`` from its combined output and exit status."""
    ending = _ENDING.search(output)
    state, restarts = (ending.group(1), int(ending.group(3))) if ending else ("unknown", 0)
    problems = []
    if returncode != 0 or state != "Complete":
        problems.append(f"ended {state} (exit {returncode})")
    if restarts:
        problems.append(f"{restarts} restart(s)")
    rank_lines = _RANK_LINE.findall(output)
    nan = [line for line in rank_lines if re.search(r"\bnan\b", line)]
    if nan:
        problems.append(f"{len(nan)} rank line(s) with nan, e.g. {nan[0]!r}")
    crashed = [line for line in rank_lines if "terminate called" in line]
    if crashed:
        problems.append(f"a rank died at shutdown: {crashed[0]!r}")
    return RunVerdict(state, restarts, problems)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=20, help="runs in a row (default 20)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    seconds: list[float] = []
    failures: list[dict[str, Any]] = []
    clean = 0
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-local-repeat-") as tmp:
        for index in range(args.runs):
            command = [sys.executable, "-m", "trainyard", "run", str(SAMPLE), "--local"]
            command += ["--workdir", str(Path(tmp) / f"run-{index}")]
            started = time.perf_counter()
            ran = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
            seconds.append(time.perf_counter() - started)
            verdict = judge_run(ran.stdout + ran.stderr, ran.returncode)
            clean += verdict.clean
            if not verdict.clean:
                failures.append({"run": index + 1, "problems": verdict.problems})
    return {
        "runs": args.runs,
        "clean": clean,
        "failures": failures,
        "run_seconds_median": round(statistics.median(seconds), 2) if seconds else None,
        "shape": "manifests/samples/trainjobs/local-ddp.yaml: 2 nodes x 2 ranks, gloo, CPU, 30 steps",
    }
