"""`trainyard demo`: the README's main job, a short tour of trainyard on the bundled samples.

Each step runs a real trainyard command on files under manifests/, exactly as a person would
type it, so the demo is also a smoke test of the install. The centre of it is the tour through
the sandbox (`trainyard cluster-demo`): TrainJobs submitted with the SDK's Kubernetes backend and
over the API, trainyard's webhook refusing a job that can never fit, jobs queued, admitted with
a placement, preempted and completed, quota usage at the end. The 1,024-node simulation is
behind ``--simulate``, so that `make demo` stays well under two minutes on a small machine.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="only the tour through the sandbox (no dry runs)")
    parser.add_argument(
        "--simulate", action="store_true", help="also simulate a 1,024-node GPU cluster over two thousand TrainJobs"
    )


def steps(quick: bool, simulate: bool = False) -> list[tuple[str, list[str]]]:
    from trainyard.cli.main import COMMANDS

    tour: list[tuple[str, list[str]]] = []
    if not quick:
        tour += [
            (
                "Kueue admission dry run: three teams, a cohort, borrowing, preemption",
                ["admit", str(MANIFESTS / "samples" / "kueue")],
            ),
            (
                "Gang placement on a GPU fabric: quota and a topology placement must both fit",
                ["admit", str(MANIFESTS / "samples" / "kueue-tas")],
            ),
            (
                "A TrainJob rendered into its JobSet and PodGroup with the torch-distributed runtime",
                ["render", str(MANIFESTS / "samples" / "trainjobs" / "torch-2-nodes.yaml")],
            ),
        ]
    if "cluster-demo" in COMMANDS:
        tour.append(
            (
                "TrainJobs through trainyard's webhook and controllers on a sandbox cluster: the SDK, a refusal, "
                "admission, preemption, completion",
                ["cluster-demo"],
            )
        )
    if simulate and "simulate" in COMMANDS:
        tour.append(("A 1,024-node GPU cluster simulated over two thousand TrainJobs", ["simulate"]))
    return tour


def terminal_width(streams: Sequence[TextIO]) -> int | None:
    """The width of the first of ``streams`` that is a terminal (``| tee demo.log`` leaves stderr
    on the terminal), or None."""
    for stream in streams:
        try:
            return os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            continue
    return None


@contextmanager
def terminal_columns() -> Iterator[None]:
    """Every step's tables sized for the terminal the demo runs in, also when its output is piped:
    COLUMNS set to that width for the steps (left as it is when the caller set it)."""
    width = None if os.environ.get("COLUMNS") else terminal_width([sys.stdout, sys.stderr])
    if width is None:
        yield
        return
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        os.environ.pop("COLUMNS", None)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.rule import Rule

    from trainyard.cli.main import main

    with terminal_columns():
        console = Console()
        for title, command in steps(args.quick, args.simulate):
            console.print(Rule(f"[bold]{title}"))
            console.print(f"[dim]$ trainyard {' '.join(command)}[/]")
            code = main(command)
            if code != 0:
                console.print(f"[red]step failed with exit code {code}[/]")
                return code
    return 0
