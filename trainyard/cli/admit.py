"""`trainyard admit FILE...`: a dry run of Kueue admission over YAML objects and Workloads.

Workloads that carry ``status.admission`` (as ``kubectl get workloads -o yaml`` exports them)
hold their quota and may be preempted; the rest are queued. Admission cycles run until nothing
changes, then every workload's outcome is printed, with the reason in words for the pending.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from trainyard.cli.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="FILE", help="YAML files or directories (multi-document)")
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table", help="output format")
    parser.add_argument("--fair-sharing", action="store_true", help="order and preempt by dominant resource share")
    parser.add_argument(
        "--one-per-cycle",
        action="store_true",
        help="admit at most one head per ClusterQueue per cycle, as Kueue does (same outcome, more cycles)",
    )


def admit(args: argparse.Namespace) -> dict[str, Any]:
    from runtimes.k8s.documents import DocumentError
    from scheduler.api.kueue import Workload
    from scheduler.api.loading import load_kueue_objects
    from scheduler.engine import AdmissionEngine, EngineConfig
    from scheduler.engine.views import report

    try:
        loaded = load_kueue_objects(args.paths)
    except DocumentError as error:
        raise UserError(str(error)) from None
    for skipped in loaded.skipped:
        print(f"note: skipped {skipped}: not a Kueue object, Node or Namespace", file=sys.stderr)
    engine = AdmissionEngine(
        EngineConfig(fair_sharing=args.fair_sharing, multiple_admissions_per_cycle=not args.one_per_cycle)
    )
    for name, labels in loaded.namespaces.items():
        engine.set_namespace(name, labels)
    for obj in loaded.objects:
        engine.apply(obj)

    def admitted_first(workload: Workload) -> int:
        return 0 if workload.status.admission is not None else 1

    for workload in sorted(loaded.workloads, key=admitted_first):
        engine.submit(workload, now=0.0)
    preempted_by: dict[str, list[dict[str, str]]] = {}
    cycles = 0
    while True:
        result = engine.schedule(now=float(cycles))
        cycles += 1
        for preemption in result.preempted:
            preempted_by.setdefault(preemption.preemptor, []).append(
                {"workload": preemption.key, "reason": preemption.reason, "message": preemption.message}
            )
        # Stop only when a cycle found no head at all: a cycle that merely parked a head still lets
        # the next one try the workload behind it (this matters with --one-per-cycle).
        if not result.decisions and not result.rounds:
            break
    summary = report(engine)
    for workload in summary["workloads"]:
        victims = preempted_by.get(f"{workload['namespace']}/{workload['name']}")
        if victims:
            workload["preempted"] = victims
    summary["cycles"] = cycles
    return summary


def run(args: argparse.Namespace) -> int:
    summary = admit(args)
    if args.output == "json":
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print_tables(summary)
    return 0


def _flavors(workload: dict[str, Any]) -> str:
    return ", ".join(f"{resource}={flavor}" for resource, flavor in sorted(workload["flavors"].items()))


def _amounts(nested: dict[str, dict[str, str]]) -> str:
    return ", ".join(
        f"{flavor}/{resource}={amount}" for flavor, amounts in nested.items() for resource, amount in amounts.items()
    )


def print_tables(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 200)
    styles = {"Admitted": "green", "Pending": "yellow", "Preempted": "red", "Inadmissible": "red", "Finished": "dim"}
    workloads = Table(title="Workloads", show_lines=False)
    for column in ("Workload", "Status", "ClusterQueue", "Flavors", "Borrowed", "Details"):
        workloads.add_column(column, overflow="fold")
    for workload in summary["workloads"]:
        details = workload["reason"] or ""
        if workload.get("preempted"):
            details = "; ".join(f"preempted {v['workload']} ({v['reason']})" for v in workload["preempted"])
        if workload.get("placement"):
            details = (details + "; " if details else "") + _placement_words(workload["placement"])
        status = workload["status"]
        workloads.add_row(
            f"{workload['namespace']}/{workload['name']}",
            f"[{styles.get(status, '')}]{status}[/]",
            workload["clusterQueue"] or "-",
            _flavors(workload) or "-",
            _amounts(workload.get("borrowed", {})) or "-",
            details,
        )
    console.print(workloads)
    queues = Table(title="ClusterQueues")
    for column in ("ClusterQueue", "Cohort", "Usage", "Borrowed", "Admitted", "Pending"):
        queues.add_column(column, overflow="fold")
    for cq in summary["clusterQueues"]:
        queues.add_row(
            cq["name"] + ("" if cq["active"] else " (inactive)"),
            cq["cohort"] or "-",
            _amounts(cq["usage"]) or "-",
            _amounts(cq["borrowed"]) or "-",
            str(cq["admitted"]),
            str(cq["pending"]),
        )
    console.print(queues)


def _placement_words(placement: dict[str, Any]) -> str:
    parts = []
    for flavor, detail in placement.items():
        if isinstance(detail, dict):
            for pod_set in detail.get("podSets", []):
                level = pod_set.get("level", "?")
                domains = "/".join(pod_set.get("domain", []))
                nodes = len(set(pod_set.get("nodes", [])))
                parts.append(f"{pod_set.get('name')}: {level} {domains} on {nodes} nodes ({flavor})")
        else:
            parts.append(f"{flavor}: {detail}")
    return "; ".join(parts)
