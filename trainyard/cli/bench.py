"""`trainyard bench NAME`: run one benchmark harness and print its figures as one JSON object."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Protocol

# name -> (module under trainyard.benchmarks, summary)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "chaos": ("trainyard.benchmarks.chaos", "TrainJobs through API faults and controller kills, then an audit"),
    "controller": (
        "trainyard.benchmarks.controller",
        "TrainJobs from creation to JobSet created through the controllers",
    ),
    "simulation": ("trainyard.benchmarks.simulation", "100,000 TrainJobs on 10,000 simulated 8-GPU nodes"),
    "admission": ("trainyard.benchmarks.admission", "Kueue's scheduler performance scenarios through the engine"),
    "placement": (
        "trainyard.benchmarks.gang_placement",
        "gang placement on 10,000 fragmented GPU nodes vs first-fit and Kueue BestFit",
    ),
    "webhook": ("trainyard.benchmarks.webhook", "admission webhook rps and latency over loopback HTTPS"),
    "launch": ("trainyard.benchmarks.launch", "local 2x2 DDP: time to the first step, trainyard vs torchrun"),
    "local-repeat": (
        "trainyard.benchmarks.local_repeat",
        "the local-ddp sample run N times in a row: Complete, no restart, no nan, no crash at shutdown",
    ),
    "queues": (
        "trainyard.benchmarks.queues",
        "queues list/pending at 1,000 ClusterQueues and 50,000 workloads; what-if on gpu-1k",
    ),
    "sandbox": ("trainyard.benchmarks.sandbox", "1,000 TrainJobs on 1,000 nodes through the service vs the simulator"),
    "parity": (
        "trainyard.benchmarks.parity",
        "the same Workloads through real Kueue and the engine: decisions compared",
    ),
    "dashboard": ("trainyard.benchmarks.dashboard", "dashboard pages' server time at kueue-large and 10,000 nodes"),
}


class BenchmarkModule(Protocol):
    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> dict[str, Any]: ...


def _load(name: str) -> BenchmarkModule:
    module: BenchmarkModule = importlib.import_module(BENCHMARKS[name][0])
    return module


def configure(parser: argparse.ArgumentParser) -> None:
    benches = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    for name, (_, summary) in BENCHMARKS.items():
        sub = benches.add_parser(name, help=summary, description=summary)
        sub.add_argument(
            "--allow-pure",
            action="store_true",
            help="run even where the compiled engine is missing or stale (the figures say engine_build: python)",
        )
        _load(name).configure(sub)


def refuse_pure_unless_asked(args: argparse.Namespace) -> None:
    """A figure of the pure-Python engine is measured only when asked for: by ``--allow-pure`` or
    ``TRAINYARD_PURE_ENGINE=1``; a stale or missing build is an error, never a quiet slow run."""
    from trainyard.cli.errors import UserError
    from trainyard.native.activation import build_state

    state = build_state()
    if not state.usable and not state.pure_asked and not args.allow_pure:
        raise UserError(
            f"trainyard bench {args.benchmark}: the engine would run pure Python: {state.reason}; or pass --allow-pure to measure it as it is"
        )


def run(args: argparse.Namespace) -> int:
    from trainyard.benchmarks.calibration import calibration_seconds

    refuse_pure_unless_asked(args)
    before = calibration_seconds()
    result = _load(args.benchmark).run(args)
    # Every figure travels with this machine's speed, measured before and after the run (as
    # shared/tools/targets does), so a recorded figure can be judged on any machine.
    result.setdefault("calibration_s", round((before + calibration_seconds()) / 2, 3))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0
