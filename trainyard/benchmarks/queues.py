"""`trainyard bench queues`: queue administration at Kueue's large scale, and a what-if.

``list`` and ``pending`` run over the kueue-large scenario's objects (1,000 ClusterQueues in 10
cohorts) and its 50,000 workloads, all submitted and settled by the engine first (``load_s``,
reported apart: it is the engine's admission, not the queries). Each query figure is the
query plus rendering its first page as the CLI prints it (into a string). ``what-if`` rehearses
gpu-1k with team-a's GPU quota cut to a quarter, base and variant in parallel processes.
Targets: list and pending under 2 s, what-if under 30 s.
"""

from __future__ import annotations

import argparse
import gc
import io
import time
from typing import Any


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-what-if", action="store_true", help="only list and pending")


def _render(printable: Any) -> str:
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=80).print(printable)
    return buffer.getvalue()


def run(args: argparse.Namespace) -> dict[str, Any]:
    from scheduler.queues import cluster_queue_summaries, cohort_summaries, load_state, pending_workloads
    from simulations.engine_driver import EngineDriver
    from simulations.events import RandomStreams
    from simulations.scenarios import BUILTIN, build
    from trainyard.cli.queues.output import cluster_queue_table, cohort_tree, pending_table

    built = build(BUILTIN["kueue-large"])
    driver = EngineDriver()
    workloads = [driver.workload(job) for job in built.jobs(RandomStreams(args.seed))]
    started = time.perf_counter()
    state = load_state(built.objects, workloads, now=0.0)
    load_s = time.perf_counter() - started
    gc.freeze()  # as `trainyard queues` does once the state is loaded (trainyard.cli.queues.command.evaluate)

    started = time.perf_counter()
    summaries = cluster_queue_summaries(state)
    cohorts = cohort_summaries(state)
    _render(cluster_queue_table(summaries[:50], "ClusterQueues"))
    _render(cohort_tree(cohorts, {s.name for s in summaries[:50]}))
    list_s = time.perf_counter() - started

    started = time.perf_counter()
    entries = pending_workloads(state)
    table, _ = pending_table(entries[:50], "pending", show_cluster_queue=True)
    _render(table)
    pending_s = time.perf_counter() - started

    result: dict[str, Any] = {
        "cluster_queues": len(summaries),
        "workloads": len(workloads),
        "pending": len(entries),
        "load_s": round(load_s, 3),
        "list_s": round(list_s, 3),
        "pending_s": round(pending_s, 3),
    }
    if not args.skip_what_if:
        from simulations.whatif import Rehearsal, apply_changes, parse_change, run_variants

        started = time.perf_counter()
        base = Rehearsal(build(BUILTIN["gpu-1k"]))
        change = parse_change("quota:team-a:gpu-h100:nvidia.com/gpu=512")
        variants = {"base": base, "team-a quarter": apply_changes(base, [change], args.seed)}
        outcome = run_variants(variants, args.seed)
        result["what_if_s"] = round(time.perf_counter() - started, 3)
        base_wait = outcome["base"].per_queue["team-a"]["wait_p95_s"]
        result["what_if_team_a_wait_p95_s"] = {
            "base": base_wait,
            "variant": outcome["team-a quarter"].per_queue["team-a"]["wait_p95_s"],
        }
    return result
