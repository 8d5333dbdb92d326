"""The `trainyard` command.

Every subcommand lives in its own module under ``trainyard.cli``, or in a subpackage named for its
concept whose ``__init__`` exposes the two functions: ``configure(parser)`` adds its arguments
(module import must stay cheap: no torch, no aiohttp at import time) and ``run(args) -> int``
does the work. Adding a command is one line in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol

from pydantic import ValidationError

from trainyard import __version__
from trainyard.cli.errors import UserError
from trainyard.gc_tuning import tune_for_large_heaps

COMMANDS: dict[str, tuple[str, str]] = {
    "admit": ("trainyard.cli.admit", "dry-run Kueue admission over YAML objects and Workloads"),
    "bench": ("trainyard.cli.bench", "run a benchmark and print its figures as JSON"),
    "demo": ("trainyard.cli.demo", "the README's main job: a short tour on the bundled samples"),
    "convert": ("trainyard.cli.convert", "convert a Training Operator v1 PyTorchJob/TFJob into a TrainJob"),
    "render": ("trainyard.cli.render", "print the JobSet, PodGroup and other objects a TrainJob becomes"),
    "run": (
        "trainyard.cli.run",
        "run a TrainJob here with real PyTorch (--local), or submit and follow it (--kubeconfig)",
    ),
    "simulate": (
        "trainyard.cli.simulate",
        "simulate a GPU cluster over virtual time with the real engine (KWOK stages)",
    ),
    "kwok": ("trainyard.cli.kwok", "export a scenario for a real KWOK cluster (Nodes, Stages, Kueue objects, jobs)"),
    "serve": ("trainyard.cli.serve", "run the cluster services: the admission webhook (HTTPS) and the controllers"),
    "queues": ("trainyard.cli.queues", "queue quota administration: list, pending, describe, set-quota, what-if"),
    "cluster-demo": (
        "trainyard.cli.cluster_demo",
        "TrainJobs through trainyard's controllers on a sandbox API server, watched step by step",
    ),
    "sandbox": (
        "trainyard.cli.sandbox",
        "sandbox up: the whole service on a local sandbox cluster (HTTPS, KWOK nodes)",
    ),
    "dashboard": ("trainyard.cli.dashboard", "the web dashboard: queues, jobs, GPU topology, simulations, live"),
}


class CommandModule(Protocol):
    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _load(name: str) -> CommandModule:
    module: CommandModule = importlib.import_module(COMMANDS[name][0])
    return module


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainyard",
        description="Kueue-aware batch scheduling for Kubeflow TrainJobs.",
    )
    parser.add_argument("--version", action="version", version=f"trainyard {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, summary) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=summary, description=summary)
        _load(name).configure(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _load(args.command).run(args)
    except UserError as error:
        print(f"trainyard {args.command}: {error}", file=sys.stderr)
        return error.exit_code
    except ValidationError as error:
        print(f"trainyard {args.command}: invalid input: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"trainyard {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def console() -> int:
    """The ``trainyard`` executable: ``main`` in a process whose collector suits large heaps.

    Only the executable tunes the process; ``main`` called in another program (the tests) leaves
    that program's collector as it is.
    """
    tune_for_large_heaps()
    return main()
