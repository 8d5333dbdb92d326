"""`trainyard admit FILE...`: a dry run of Kueue admission over YAML objects, Workloads and TrainJobs.

Every object is read through the one validation path (``scheduler.api.loading``): an invalid one
is refused with the webhook's message, file and line (exit 2), unknown fields are warnings
(``--strict``: errors), foreign documents are skipped with a note. TrainJobs become their
Workloads as the controller builds them (``scheduler.trainjob.workload_for_trainjob``), with
runtimes from the inputs, ``--runtime`` files or the built-in ``manifests/runtimes``; a TrainJob
without a queue-name label gets its namespace's LocalQueue ``default``, as the webhook gives it.
Workloads that carry ``status.admission`` (as ``kubectl get workloads -o yaml`` exports them)
hold their quota and may be preempted; the rest are queued. Admission cycles run until nothing
changes, then every workload's outcome is printed, with the reason in words for the pending.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from runtimes.api.trainer import AnyTrainingRuntime
    from scheduler.api.kueue import Workload
    from scheduler.api.loading import KueueObjects
    from scheduler.engine import AdmissionEngine, CheckVerdict
    from trainyard.cli.admit.check_states import GivenStates


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="FILE", help="YAML files or directories (multi-document)")
    parser.add_argument(
        "--runtime",
        metavar="FILE",
        action="append",
        default=[],
        help="TrainingRuntime/ClusterTrainingRuntime file(s) for the TrainJobs (default: the built-in runtimes)",
    )
    parser.add_argument("--strict", action="store_true", help="unknown fields are errors, not warnings")
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table", help="output format")
    parser.add_argument("--fair-sharing", action="store_true", help="order and preempt by dominant resource share")
    parser.add_argument(
        "--one-per-cycle",
        action="store_true",
        help="admit at most one head per ClusterQueue per cycle, as Kueue does (same outcome, more cycles)",
    )


def admit(args: argparse.Namespace) -> dict[str, Any]:
    from scheduler.engine import AdmissionEngine, EngineConfig, report
    from trainyard.cli.admit.check_states import annotate, check_report

    loaded, given, sources = _load_inputs(args)
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
    rejected: dict[str, CheckVerdict] = {}
    preempted_by, cycles = _settle(engine, given, rejected)
    summary = report(engine)
    annotate(summary, engine, given, rejected)
    summary["admissionChecks"] = check_report(engine)
    for workload in summary["workloads"]:
        key = f"{workload['namespace']}/{workload['name']}"
        victims = preempted_by.get(key)
        if victims:
            workload["preempted"] = victims
        if key in sources:
            workload["job"] = sources[key]
    summary["cycles"] = cycles
    return summary


def _load_inputs(args: argparse.Namespace) -> tuple[KueueObjects, GivenStates, dict[str, Any]]:
    """The checked objects, every TrainJob and job kind turned into its Workload (and their sources),
    and the admission-check states the given Workloads carried.

    Warnings and notes go to stderr; an input with nothing to admit is an error, not an empty table.
    """
    from runtimes.k8s.documents import DocumentError
    from scheduler.api.loading import InputError, load_kueue_objects
    from trainyard.cli.admit.check_states import given_states
    from trainyard.cli.admit.job_workloads import job_workloads

    # Callers that build the namespace themselves (tests, other commands) may leave the newer flags out.
    strict, runtime_files = bool(getattr(args, "strict", False)), list(getattr(args, "runtime", []))
    try:
        loaded = load_kueue_objects(args.paths, strict=strict, trainjob_rules=False)
        extra_runtimes = load_kueue_objects(runtime_files, strict=strict).runtimes if runtime_files else []
    except DocumentError as error:
        for line in error.warnings if isinstance(error, InputError) else []:
            print(line, file=sys.stderr)
        raise UserError(str(error)) from None
    for line in [*loaded.skipped, *loaded.warnings]:
        print(line if ": warning: " in line else f"note: {line}", file=sys.stderr)
    given = given_states(loaded.workloads)  # the Workloads as given, before the jobs' own are added
    loaded.workloads += trainjob_workloads(loaded, [*loaded.runtimes, *extra_runtimes], bool(runtime_files))
    derived, sources = job_workloads(loaded)
    loaded.workloads += derived
    if not loaded.workloads and not loaded.objects:
        read = ", ".join(str(p) for p in args.paths)
        raise UserError(
            f"{read}: nothing to admit: no Workload (kueue.x-k8s.io), job (TrainJob, Job, JobSet, Pod, Kubeflow "
            "job) or queue object found; give the queue objects together with the Workloads or jobs to admit"
        )
    if not loaded.workloads:
        print("note: no Workload or job to admit: showing the queues only", file=sys.stderr)
    return loaded, given, sources


def _settle(
    engine: AdmissionEngine, given: GivenStates, rejected: dict[str, CheckVerdict]
) -> tuple[dict[str, list[dict[str, str]]], int]:
    """Admission cycles until nothing changes: who preempted whom, and how many cycles ran."""
    from trainyard.cli.admit.check_states import deactivate_rejected

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
        # the next one try the workload behind it (this matters with --one-per-cycle). A workload an
        # admission check rejected frees its quota: then the others get another try.
        quiet = not result.decisions and not result.rounds
        if quiet and not deactivate_rejected(engine, given, rejected, float(cycles)):
            return preempted_by, cycles


def trainjob_workloads(loaded: KueueObjects, runtimes: list[AnyTrainingRuntime], given: bool) -> list[Workload]:
    """Each TrainJob's Workload; a TrainJob the webhook would refuse is refused the same way."""
    from runtimes.api.trainer import TrainJob
    from runtimes.errors import RenderError
    from runtimes.loading import find_runtime, load_builtin_runtimes
    from runtimes.validation import validate_trainjob
    from scheduler.api.checks import describe_errors, subject_of
    from scheduler.api.job_validation import validate_job_labels
    from scheduler.api.kueue import DEFAULT_LOCAL_QUEUE_NAME, QUEUE_NAME_LABEL, LocalQueue, WorkloadPriorityClass
    from scheduler.trainjob import workload_for_trainjob

    if not loaded.trainjobs:
        return []
    pool = list(runtimes) if given else [*runtimes, *load_builtin_runtimes()]
    queues: dict[str, set[str]] = {}
    for obj in loaded.objects:
        if isinstance(obj, LocalQueue):
            queues.setdefault(obj.namespace or "default", set()).add(obj.name)
    priorities = {obj.name for obj in loaded.objects if isinstance(obj, WorkloadPriorityClass)}
    workloads = []
    problems = []
    for read in loaded.trainjobs:
        trainjob = read.obj
        assert isinstance(trainjob, TrainJob)
        trainjob.metadata.namespace = trainjob.metadata.namespace or "default"
        namespace = trainjob.metadata.namespace
        subject = subject_of("TrainJob", trainjob.name, namespace)
        labels = trainjob.metadata.labels
        if QUEUE_NAME_LABEL not in labels and DEFAULT_LOCAL_QUEUE_NAME in queues.get(namespace, set()):
            labels[QUEUE_NAME_LABEL] = DEFAULT_LOCAL_QUEUE_NAME  # the mutating webhook's default
        errors = validate_job_labels(
            labels, None, suspended=True, priority_classes=priorities, local_queues=queues.get(namespace, set())
        )
        ref = trainjob.spec.runtime_ref
        runtime = find_runtime(pool, ref.name, ref.effective_kind)
        # The webhook's one pass: label rules, then Trainer's rules with the runtime.
        errors += validate_trainjob(trainjob, runtime)
        if runtime is not None and not errors:
            try:
                workloads.append(workload_for_trainjob(trainjob, runtime))
            except RenderError as error:
                errors = error.errors
        if errors:
            looked = ""
            if runtime is None:
                known = ", ".join(sorted({r.metadata.name for r in pool})) or "none"
                looked = f" (looked among the given and built-in runtimes: {known}; pass --runtime FILE)"
            problems.append(f"{read.where(errors[0].path)}: {describe_errors(subject, errors)}{looked}")
    if problems:
        raise UserError("\n".join(problems))
    return workloads


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

    # a terminal's width, or COLUMNS where a caller (the demo) says it; a log without either: 200
    console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200)
    styles = {
        "Admitted": "green",
        "QuotaReserved": "cyan",
        "Pending": "yellow",
        "Preempted": "red",
        "Inadmissible": "red",
        "Deactivated": "red",
        "Finished": "dim",
    }
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
    for column in ("ClusterQueue", "Cohort", "Usage", "Borrowed", "Admitted", "QuotaReserved", "Pending"):
        queues.add_column(column, overflow="fold")
    for cq in summary["clusterQueues"]:
        queues.add_row(
            cq["name"] + ("" if cq["active"] else " (inactive)"),
            cq["cohort"] or "-",
            _amounts(cq["usage"]) or "-",
            _amounts(cq["borrowed"]) or "-",
            str(cq["admitted"]),
            str(cq.get("quotaReserved", 0)),
            str(cq["pending"]),
        )
    console.print(queues)
    if summary.get("admissionChecks"):
        checks = Table(title="AdmissionChecks")
        for column in ("AdmissionCheck", "Controller", "Active", "Why not"):
            checks.add_column(column, overflow="fold")
        for check in summary["admissionChecks"]:
            checks.add_row(check["name"], check["controllerName"], "yes" if check["active"] else "no", check["reason"])
        console.print(checks)


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
