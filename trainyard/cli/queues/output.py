"""Tables for `trainyard queues`: readable at 80 columns, and at 1,000 ClusterQueues (a page at a
time, with a summary line and the flags gathered under the table)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from scheduler.queues import (
    ClusterQueueSummary,
    CohortSummary,
    PendingWorkload,
    QuotaPlan,
    WorkloadStory,
    place_for_people,
)

MAX_TREE_MEMBERS = 8  # ClusterQueues named under a cohort in the tree; more are counted


def console() -> Console:
    return Console(highlight=False)


def age(seconds: float) -> str:
    seconds = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            big, rest = divmod(seconds, size)
            smaller = {"d": ("h", 3600), "h": ("m", 60), "m": ("s", 1)}[unit]
            small = rest // smaller[1]
            return f"{big}{unit}{small}{smaller[0]}" if small else f"{big}{unit}"
    return f"{seconds}s"


def _or_dash(value: str | None) -> str:
    return "-" if value is None else value


def page_line(shown: int, offset: int, total: int, what: str) -> str:
    if total == 0:
        return f"no {what}"
    if shown == total:
        return f"{total} {what}"
    last = offset + shown
    more = f"; --offset {last} for the next page" if last < total else ""
    return f"{what} {offset + 1}-{last} of {total}{more}"


def _limited(amount: str, limit: str | None, stacked: bool) -> str:
    """An amount with its limit ("512≤1024"); stacked on two lines where the table must be narrow."""
    if not limit:
        return amount
    return f"{amount}\n≤{limit}" if stacked else f"{amount}≤{limit}"


def cluster_queue_table(summaries: Sequence[ClusterQueueSummary], title: str, *, narrowing: int = 0) -> Table:
    """One row per flavor/resource of each ClusterQueue, the counts right after the name. For a
    terminal the wide form would overflow, ``narrowing`` 1 puts borrowing and lending limits under
    the amounts and leaves the cohort to the tree printed below; 2 also puts the nominal quota under
    the usage. So every column stays whole at 80 columns."""
    narrow = narrowing >= 1
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    table.add_column("ClusterQueue", overflow="fold")
    table.add_column("Adm/Pend", justify="right", no_wrap=True)
    if not narrow:
        table.add_column("Cohort", overflow="fold")
    # the flavor/resource pair is what a reader scans for: wide enough to stay on one line where it can
    pairs = [len(f"{line.flavor}/{line.resource}") for summary in summaries for line in summary.resources or []]
    table.add_column("Flavor/resource", overflow="fold", min_width=min(max([15, *pairs]), 20))
    table.add_column("Used/nom", justify="right", no_wrap=True)
    table.add_column("Borrowed", justify="right", no_wrap=True)
    table.add_column("Lent", justify="right", no_wrap=True)
    for summary in summaries:
        name = ("[red]![/]" if summary.flags else "") + summary.name
        counts = f"{summary.admitted}/{summary.pending}"
        lines = summary.resources or []
        cohort = [] if narrow else [_or_dash(summary.cohort)]
        if not lines:
            table.add_row(name, counts, *cohort, "-", "-", "-", "-")
        for i, line in enumerate(lines):
            data = line.to_dict()
            table.add_row(
                name if i == 0 else "",
                counts if i == 0 else "",
                *(cohort if i == 0 else [""] * len(cohort)),
                f"{line.flavor}/{line.resource}",
                f"{data['usage']}{chr(10) if narrowing >= 2 else ''}/{data['nominal']}",
                _limited(data["borrowed"], data["borrowingLimit"], narrow),
                _limited(data["lent"], data["lendingLimit"], narrow),
            )
    return table


def whole_at_width(table: Table, width: int) -> bool:
    """Whether ``table`` printed ``width`` columns wide keeps every column: Rich crops what does
    not fit at the right edge and shortens unwrappable cells with an ellipsis, never folds them."""
    probe = Console(width=width, file=io.StringIO(), color_system=None, highlight=False)
    probe.print(table)
    text = probe.file.getvalue()  # type: ignore[attr-defined]
    return "…" not in text and all(str(column.header) in text for column in table.columns)


def fitting_cluster_queue_table(out: Console, summaries: Sequence[ClusterQueueSummary], title: str) -> Table:
    """The widest form of the table the terminal holds whole (the narrowest when none does)."""
    for narrowing in (0, 1):
        table = cluster_queue_table(summaries, title, narrowing=narrowing)
        if whole_at_width(table, out.width):
            return table
    return cluster_queue_table(summaries, title, narrowing=2)


def cohort_tree(cohorts: Sequence[CohortSummary], shown_queues: set[str] | None = None) -> Tree:
    tree = Tree("[bold]Cohorts[/]")
    by_name = {c.name: c for c in cohorts}
    placed: set[str] = set()

    def label(cohort: CohortSummary) -> str:
        own = ", ".join(
            f"{line.flavor}/{line.resource} {line.to_dict()['nominal']}" for line in cohort.resources if line.nominal
        )
        problem = f" [red]({cohort.problem})[/]" if cohort.problem else ""
        return f"{cohort.name}" + (f" — own quota {own}" if own else "") + problem

    def add(branch: Tree, cohort: CohortSummary) -> None:
        placed.add(cohort.name)
        node = branch.add(label(cohort))
        for child in cohort.cohorts:
            if child in by_name and child not in placed:
                add(node, by_name[child])
        members = cohort.cluster_queues
        if len(members) <= MAX_TREE_MEMBERS:
            for member in members:
                node.add(member)
        else:
            listed = [m for m in members if shown_queues and m in shown_queues][:MAX_TREE_MEMBERS]
            for member in listed:
                node.add(member)
            node.add(f"[dim]{len(members) - len(listed)} more ClusterQueues[/]")

    for cohort in cohorts:
        if cohort.name not in placed and (cohort.parent is None or cohort.parent not in by_name or cohort.problem):
            add(tree, cohort)
    return tree


def print_list(
    summaries: Sequence[ClusterQueueSummary],
    cohorts: Sequence[CohortSummary],
    *,
    total: int,
    offset: int,
    totals: dict[str, int],
    notes: Sequence[str],
) -> None:
    out = console()
    out.print(
        f"{totals['clusterQueues']} ClusterQueues ({totals['inactive']} inactive, {totals['invalid']} invalid), "
        f"{len(cohorts)} cohorts, {totals['admitted']} admitted and {totals['pending']} pending workloads"
    )
    out.print(fitting_cluster_queue_table(out, summaries, page_line(len(summaries), offset, total, "ClusterQueues")))
    flagged = [s for s in summaries if s.flags]
    for summary in flagged:
        for flag in summary.flags:
            out.print(f"[red]![/] {summary.name}: {flag}")
    if cohorts:
        out.print(cohort_tree(cohorts, {s.name for s in summaries}))
    for note_text in notes:
        out.print(f"[dim]{note_text}[/]")


def pending_table(
    entries: Sequence[PendingWorkload], title: str, *, show_cluster_queue: bool
) -> tuple[Table, dict[str, str]]:
    """The table, and the reasons it refers to (``R1``...: one line each, under the table:
    a thousand workloads waiting for the same quota share one reason)."""
    # Widths from the content, two spaces between columns, both positions in one column and the
    # namespace/name once: a row of kueue-large's names fits 80 columns on one line; only longer
    # names fold.
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    if show_cluster_queue:
        table.add_column("ClusterQueue", overflow="fold")
    table.add_column("#CQ/LQ\n(1=next)", justify="right", no_wrap=True)
    table.add_column("Workload", overflow="fold")
    table.add_column("Queue", overflow="fold")
    table.add_column("Pri", justify="right", no_wrap=True)
    table.add_column("Requests", overflow="fold")
    table.add_column("Age", justify="right", no_wrap=True)
    table.add_column("Why", no_wrap=True)
    reasons: dict[str, str] = {}
    for entry in entries:
        requests = ", ".join(f"{r}={q}" for r, q in entry.requests.items()) or "-"
        reason = entry.reason or "-"
        label = reasons.setdefault(reason, f"R{len(reasons) + 1}")
        row = [
            f"{place_for_people(entry.position_in_cluster_queue)}/{place_for_people(entry.position_in_local_queue)}",
            entry.key,
            entry.local_queue or "-",
            str(entry.priority),
            requests,
            age(entry.age_seconds),
            label,
        ]
        if show_cluster_queue:
            row.insert(0, entry.cluster_queue or "-")
        table.add_row(*row)
    return table, {label: reason for reason, label in reasons.items()}


def print_pending(entries: Sequence[PendingWorkload], *, total: int, offset: int, show_cluster_queue: bool) -> None:
    out = console()
    title = page_line(len(entries), offset, total, "pending workloads")
    table, reasons = pending_table(entries, title, show_cluster_queue=show_cluster_queue)
    out.print(table)
    for label, reason in reasons.items():
        out.print(f"{label}: {reason}")


def print_story(story: WorkloadStory) -> None:
    out = console()
    data = story.to_dict()
    out.print(f"[bold]{story.key}[/]  {story.status}  priority {story.priority}")
    out.print(f"  LocalQueue {story.local_queue or '-'} -> ClusterQueue {story.cluster_queue or '-'}")
    requests = ", ".join(f"{r}={q}" for r, q in story.requests.items()) or "-"
    out.print(f"  requests: {requests}")
    if story.pending is not None:
        out.print(
            f"  position: {place_for_people(story.pending.position_in_cluster_queue)} in the ClusterQueue, "
            f"{place_for_people(story.pending.position_in_local_queue)} in the LocalQueue (1 = the next to be tried); "
            f"waiting {age(story.pending.age_seconds)}"
        )
        out.print(f"  why it waits: {story.pending.reason or '-'}")
    if story.admission is not None:
        flavors = ", ".join(f"{r}={f}" for r, f in story.admission.get("flavors", {}).items())
        out.print(
            f"  admitted with flavors {flavors or '-'}"
            + (" (by this evaluation)" if story.admitted_by_evaluation else "")
        )
        borrowed = _amounts(story.admission.get("borrowed") or {})
        if borrowed:
            out.print(f"  borrowing: {borrowed}")
    explanation = story.explanation
    if explanation is not None:
        out.print(f"  engine's verdict: {explanation.words}")
        table = Table(
            title="Flavors tried (in the ClusterQueue's order; * chosen)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        for column in ("Pod set", "Flavor", "Verdict", "Why"):
            table.add_column(column, overflow="fold")
        for verdict in explanation.flavors:
            mark = " *" if verdict.chosen else ""
            table.add_row(verdict.pod_set, verdict.flavor + mark, verdict.words, "; ".join(verdict.reasons) or "-")
        out.print(table)
        if explanation.borrowing:
            out.print(f"  would borrow: {_amounts(explanation.borrowing)}")
        preemption = explanation.preemption
        out.print(f"  preemption: {preemption.words}")
        policy = ", ".join(f"{k}={v}" for k, v in preemption.policy.items())
        out.print(f"    policy: {policy}")
        for key, reason in preemption.victims:
            out.print(f"    would preempt {key} ({reason})")
        if explanation.placement:
            out.print(f"  placement: {explanation.placement}")
    if story.interruptions:
        out.print("  preemptions and evictions suffered:")
        for item in story.interruptions:
            out.print(f"    {item.kind} ({item.reason}) {item.when}: {item.message}")
    estimate = data["estimatedStart"]
    if estimate is not None:
        seconds = estimate["secondsFromNow"]
        when = "not within the simulated horizon" if seconds is None else f"in about {age(seconds)}"
        out.print(f"  estimated start if nothing new arrives: {when} ({estimate['assumption']})")


def _amounts(nested: dict[str, dict[str, str]]) -> str:
    return ", ".join(
        f"{flavor}/{resource}={amount}" for flavor, amounts in nested.items() for resource, amount in amounts.items()
    )


def print_plan(plan: QuotaPlan, applied: str | None) -> None:
    out = console()
    out.print(f"ClusterQueue {plan.new.name}:")
    for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
        before, after = plan.before.get(key), plan.after.get(key)
        if before == after:
            out.print(f"    {key}: {_or_dash(before)}")
        else:
            out.print(f"[red]-   {key}: {_or_dash(before)}[/]")
            out.print(f"[green]+   {key}: {_or_dash(after)}[/]")
    effect = plan.effect
    if effect is not None:
        out.print(f"effect on the queues (pending {effect.pending_before} -> {effect.pending_after}):")
        _listed(out, "would be admitted", effect.admitted)
        _listed(out, "would be preempted", effect.preempted)
        _listed(out, "would start borrowing (preemptible by reclaim)", effect.newly_borrowing)
    out.print(applied or "not applied: run again with --yes to apply")


def _listed(out: Console, what: str, keys: Sequence[str], limit: int = 20) -> None:
    if not keys:
        out.print(f"  {what}: none")
        return
    shown = ", ".join(keys[:limit]) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")
    out.print(f"  {what} ({len(keys)}): {shown}")


def dump(document: Any, output: str) -> None:
    import json
    import sys

    if output == "json":
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        import yaml

        sys.stdout.write(yaml.safe_dump(document, sort_keys=False))
