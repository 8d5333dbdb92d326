"""`trainyard queues list|pending|describe|set-quota|what-if`: queue quota administration.

Each subcommand reads the queues from YAML files (``--objects DIR``, Workloads as
``kubectl get workloads -A -o yaml`` exports them) or from a cluster (``--kubeconfig``), loads
them into the admission engine (``scheduler.queues.load_state``) and prints what the queries
answer: a table by default, ``--output json|yaml`` for scripts.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainyard.cli.errors import UserError
from trainyard.cli.queues.source import Loaded, load_source

if TYPE_CHECKING:
    from scheduler.queues import QueueState

DEFAULT_LIMIT = 50


def _source_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("where the queues are read from (one of)")
    source.add_argument("--objects", metavar="DIR", action="append", type=Path, help="YAML files or directories")
    source.add_argument("--kubeconfig", metavar="PATH", type=Path, help="read the cluster's objects")
    source.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    parser.add_argument("--output", "-o", choices=("table", "json", "yaml"), default="table")
    parser.add_argument("--fair-sharing", action="store_true", help="the engine orders by dominant resource share")
    parser.add_argument(
        "--strict", action="store_true", help="unknown fields in --objects files are errors, not warnings"
    )


def _paging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="rows per page (0: all)")
    parser.add_argument("--offset", type=int, default=0, help="rows to skip")


def configure(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="queues_command", metavar="SUBCOMMAND", required=True)
    listing = commands.add_parser("list", help="ClusterQueues: quota, usage, borrowing, lending; cohorts as a tree")
    _source_arguments(listing)
    _paging(listing)
    listing.add_argument("--cohort", help="only ClusterQueues under this cohort")
    listing.add_argument("--name", help="only ClusterQueues whose name contains this text")
    listing.add_argument("--inactive", action="store_true", help="only inactive ClusterQueues")

    pending = commands.add_parser("pending", help="pending workloads in admission order, with positions and reasons")
    _source_arguments(pending)
    _paging(pending)
    pending.add_argument(
        "queue", nargs="?", metavar="CLUSTERQUEUE|LOCALQUEUE", help="a ClusterQueue, or with --namespace a LocalQueue"
    )
    pending.add_argument("--namespace", "-n", help="only this namespace (a LocalQueue name then names a LocalQueue)")
    pending.add_argument(
        "--local", action="store_true", help="compute locally even where the cluster serves the visibility API"
    )

    describe = commands.add_parser("describe", help="the engine's story of one workload")
    _source_arguments(describe)
    describe.add_argument("workload", metavar="WORKLOAD", help="NAME (with --namespace) or NAMESPACE/NAME")
    describe.add_argument("--namespace", "-n", default="default")
    describe.add_argument(
        "--duration",
        type=float,
        default=3600.0,
        help="seconds a workload runs, for the start estimate (maximumExecutionTimeSeconds wins where set)",
    )
    describe.add_argument("--no-estimate", action="store_true", help="skip the start estimate (a simulation)")

    quota = commands.add_parser("set-quota", help="change one quota: validated, shown as a diff with its effect")
    _source_arguments(quota)
    quota.add_argument("cluster_queue", metavar="CLUSTERQUEUE")
    quota.add_argument("--flavor", required=True)
    quota.add_argument("--resource", required=True)
    quota.add_argument("--nominal", required=True, metavar="Q")
    quota.add_argument("--borrowing-limit", metavar="Q")
    quota.add_argument("--lending-limit", metavar="Q")
    quota.add_argument("--yes", action="store_true", help="apply the change (without it, only show it)")

    from trainyard.cli.queues.what_if import configure as configure_what_if

    whatif = commands.add_parser("what-if", help="simulate the queues with and without changes, compare per queue")
    _source_arguments(whatif)
    configure_what_if(whatif)


def evaluate(loaded: Loaded, args: argparse.Namespace) -> QueueState:
    import gc

    from scheduler.engine import EngineConfig
    from scheduler.queues import load_state

    state = load_state(
        loaded.objects,
        loaded.workloads,
        now=time.time(),
        namespaces=loaded.namespaces,
        config=EngineConfig(fair_sharing=args.fair_sharing),
    )
    # The engine's objects live as long as the command: move them out of the collector's sight, or
    # each full collection walks every workload again (seconds at 50,000); run() unfreezes them.
    gc.freeze()
    return state


def _page(items: list[Any], args: argparse.Namespace) -> list[Any]:
    if args.limit < 0 or args.offset < 0:
        raise UserError("--limit and --offset must be 0 or more")
    end = None if args.limit == 0 else args.offset + args.limit
    return items[args.offset : end]


# ------------------------------------------------------------------------------ commands


def run_list(args: argparse.Namespace) -> int:
    from scheduler.queues import cluster_queue_summaries, cohort_summaries
    from trainyard.cli.queues import output

    loaded = load_source(args)
    state = evaluate(loaded, args)
    every = cluster_queue_summaries(state)
    selected = cluster_queue_summaries(state, cohort=args.cohort, name_contains=args.name, inactive_only=args.inactive)
    page = _page(selected, args)
    cohorts = cohort_summaries(state)
    notes = list(loaded.notes)
    if state.admitted_now:
        notes.append(
            f"{len(state.admitted_now)} workload(s) pending in the objects fit now; they are counted as the engine "
            "would admit them"
        )
    totals = {
        "clusterQueues": len(every),
        "inactive": sum(1 for s in every if not s.active),
        "invalid": sum(1 for s in every if s.invalid),
        "admitted": sum(s.admitted for s in every),
        "pending": sum(s.pending for s in every),
    }
    if args.output != "table":
        output.dump(
            {
                "totals": totals,
                "total": len(selected),
                "offset": args.offset,
                "clusterQueues": [s.to_dict() for s in page],
                "cohorts": [c.to_dict() for c in cohorts],
                "notes": notes,
            },
            args.output,
        )
        return 0
    output.print_list(page, cohorts, total=len(selected), offset=args.offset, totals=totals, notes=notes)
    return 0


def run_pending(args: argparse.Namespace) -> int:
    from scheduler.queues import pending_workloads
    from trainyard.cli.queues import output

    loaded = load_source(args)
    state = evaluate(loaded, args)
    cluster_queue = None
    local_queue = None
    if args.queue is not None and args.namespace is not None:
        local_queue = args.queue
        if state.engine.local_queue(args.namespace, local_queue) is None:
            # as the visibility API answers 404 for it: a misspelt queue is not an empty one
            known = state.engine.local_queue_names(args.namespace)
            raise UserError(
                f"LocalQueue {local_queue!r} does not exist in namespace {args.namespace!r} "
                f"(its LocalQueues: {', '.join(known) or 'none'})"
            )
    elif args.queue is not None:
        cluster_queue = args.queue
        if state.engine.cluster_queue(cluster_queue) is None:
            raise UserError(f"ClusterQueue {cluster_queue!r} does not exist (a LocalQueue needs --namespace)")
    entries = pending_workloads(state, cluster_queue=cluster_queue, namespace=args.namespace, local_queue=local_queue)
    source = "computed locally by the engine"
    if args.kubeconfig is not None and not args.local:
        from trainyard.cli.queues.pending_order import ordered_by_cluster

        entries, source = ordered_by_cluster(args, state, entries, cluster_queue, local_queue)
    for note_text in loaded.notes:
        output.console().print(f"[dim]note: {note_text}[/]")
    page = _page(entries, args)
    if args.output != "table":
        output.dump(
            {"source": source, "total": len(entries), "offset": args.offset, "items": [e.to_dict() for e in page]},
            args.output,
        )
        return 0
    show_cq = cluster_queue is None
    output.print_pending(page, total=len(entries), offset=args.offset, show_cluster_queue=show_cq)
    output.console().print(f"[dim]order and positions: {source}[/]")
    return 0


def _workload_key(args: argparse.Namespace) -> str:
    return args.workload if "/" in args.workload else f"{args.namespace}/{args.workload}"


def run_describe(args: argparse.Namespace) -> int:
    from scheduler.queues import describe_workload
    from trainyard.cli.queues import output

    loaded = load_source(args)
    state = evaluate(loaded, args)
    key = _workload_key(args)
    workload = state.engine.workload(key)
    if workload is None:
        raise UserError(f"no Workload {key}; name it NAMESPACE/NAME or NAME --namespace NS")
    estimate = None
    if not args.no_estimate and workload.admission is None:
        from simulations.whatif import estimate_start

        estimate = estimate_start(state, key, default_duration=args.duration)
    story = describe_workload(state, key, estimate)
    assert story is not None
    if args.output != "table":
        output.dump(story.to_dict(), args.output)
        return 0
    output.print_story(story)
    return 0


def run_set_quota(args: argparse.Namespace) -> int:
    from scheduler.queues import QuotaChange, QuotaChangeError, plan_quota_change
    from trainyard.cli.queues import output
    from webhooks.handlers import describe_errors, subject_of

    loaded = load_source(args)
    state = evaluate(loaded, args)
    change = QuotaChange(
        args.cluster_queue, args.flavor, args.resource, args.nominal, args.borrowing_limit, args.lending_limit
    )
    try:
        plan = plan_quota_change(state, change)
    except QuotaChangeError as error:
        raise UserError(str(error)) from None
    if plan.errors:
        message = describe_errors(subject_of("ClusterQueue", plan.new.name, None), plan.errors)
        raise UserError(f"{_where_in_files(args, change.cluster_queue, plan.errors[0].path)}{message}")
    applied = None
    if args.yes and plan.changed:
        applied = _apply(args, loaded, plan.new, change)
    elif args.yes:
        applied = "nothing to apply: the quota already has these values"
    if args.output != "table":
        output.dump({**plan.to_dict(), "applied": applied}, args.output)
        return 0
    output.print_plan(plan, applied)
    return 0


def _where_in_files(args: argparse.Namespace, cluster_queue: str, field: str) -> str:
    """``file:line: `` of the quota field the change would break, on files (on a cluster: nothing)."""
    if args.objects is None:
        return ""
    from runtimes.k8s.documents import read_documents
    from runtimes.messages import parse_field_path
    from trainyard.cli.queues.file_edit import find_cluster_queue_file

    path = find_cluster_queue_file(args.objects, cluster_queue)
    for document in read_documents([path]):
        if document.kind == "ClusterQueue" and document.name == cluster_queue:
            return f"{path}:{document.line_of(parse_field_path(field))}: "
    return f"{path}: "


def _apply(args: argparse.Namespace, loaded: Loaded, new: Any, change: Any) -> str:
    if args.objects is not None:
        from trainyard.cli.queues.file_edit import edit_file, find_cluster_queue_file

        path = find_cluster_queue_file(args.objects, change.cluster_queue)
        edit_file(path, change)
        return f"applied: {path} edited in place"
    from trainyard.cli.queues.cluster_side import patch_cluster_queue

    version = loaded.resource_versions.get(change.cluster_queue, "")
    groups = new.to_dict()["spec"]["resourceGroups"]
    answer = patch_cluster_queue(args.kubeconfig, args.context, change.cluster_queue, version, groups)
    return f"applied: ClusterQueue {change.cluster_queue} patched (resourceVersion {answer['metadata'].get('resourceVersion')})"


def run(args: argparse.Namespace) -> int:
    import gc

    handlers = {"list": run_list, "pending": run_pending, "describe": run_describe, "set-quota": run_set_quota}
    try:
        if args.queues_command == "what-if":
            from trainyard.cli.queues.what_if import run as run_what_if

            return run_what_if(args)
        return handlers[args.queues_command](args)
    finally:
        gc.unfreeze()  # evaluate() froze the loaded state for the command's lifetime; a caller goes on
