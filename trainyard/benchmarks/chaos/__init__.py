"""`trainyard bench chaos`: TrainJobs through the controllers while the API server misbehaves and
the controller is killed, then an audit of every write the API server committed.

``embedded`` runs it on the embedded API server (faults injected by the server itself, the audit
read from its store); ``real`` (``--real``) on kube-apiserver and etcd (faults from a proxy in
front of kube-apiserver, the audit read from etcd's history). ``harness`` holds what both share,
``audit`` the audit, ``diagnostics`` the story of a lost job.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from trainyard.benchmarks.chaos.harness import fault_kinds


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=int, default=1000, help="TrainJobs to submit (default 1,000)")
    parser.add_argument("--rate", type=float, default=100.0, help="TrainJobs submitted per second (default 100)")
    parser.add_argument("--fault-rate", type=float, default=0.03, help="share of requests that meet a fault")
    parser.add_argument(
        "--fault-kinds",
        default="all",
        help="comma-separated faults to draw from: conflict, expire, throttle, server-error, drop (all: these "
        "five, the default), and answer-lost (a write served, its answer cut: drawn only when named)",
    )
    parser.add_argument("--restart-every", type=float, default=3.0, help="seconds between controller kills")
    parser.add_argument("--cpu-per-queue", type=int, default=24, help="each ClusterQueue's nominal CPU quota")
    parser.add_argument(
        "--compaction-every",
        type=float,
        default=10.0,
        help="least seconds between expired histories, after which every informer lists again (default 10)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settle-timeout", type=float, default=600.0, help="seconds to wait for every job")
    parser.add_argument(
        "--progress", type=float, default=30.0, help="seconds between progress lines on stderr (0: none)"
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="on a real kube-apiserver and etcd (make cluster-tools) with faults from a proxy in front of it, "
        "the audit read from etcd's history",
    )
    parser.add_argument("--binaries", type=Path, metavar="DIR", help="with --real: where the component binaries are")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from sandbox.apiserver.faults import FAULT_KINDS, OPT_IN_KINDS

    if args.jobs < 1 or args.rate <= 0 or not 0 <= args.fault_rate < 1:
        raise SystemExit("--jobs must be at least 1, --rate above 0 and --fault-rate in [0, 1)")
    unknown = sorted(set(fault_kinds(args)) - set(FAULT_KINDS) - set(OPT_IN_KINDS))
    if unknown or not fault_kinds(args):
        raise SystemExit(
            f"--fault-kinds: unknown {', '.join(unknown) or '(none given)'}; "
            f"give a comma-separated choice of {', '.join(FAULT_KINDS + OPT_IN_KINDS)}, or all"
        )
    if args.real:
        from trainyard.benchmarks.chaos.real import measure_real

        return asyncio.run(measure_real(args))
    from trainyard.benchmarks.chaos.embedded import measure

    return asyncio.run(measure(args))
