"""The Queues page: cohorts as a tree, ClusterQueues with quota bars, a queue's pending list.

Every figure comes from ``scheduler.queues`` (the summaries `trainyard queues list` prints, the
order and reasons `trainyard queues pending` prints), paged as the CLI pages it: 1,000
ClusterQueues are 40 pages of 25, and a queue's 50,000 pending workloads pages of 50.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.html import Html, age, esc, link, row, table, tag, url
from dashboard.pages.layout import Page, bar, notes, pager, queue_colour
from dashboard.pages.quota_form import quota_section
from scheduler.queues import (
    ClusterQueueSummary,
    CohortSummary,
    PendingWorkload,
    QueueState,
    ResourceLine,
    cluster_queue_summaries,
    pending_workloads,
)

QUEUES_PER_PAGE = 25
PENDING_PER_PAGE = 50


def _int(query: Mapping[str, str], name: str, default: int = 0) -> int:
    try:
        return max(0, int(query.get(name, default)))
    except ValueError:
        return default


def resource_bar(line: ResourceLine, colour: str) -> Html:
    """Usage against nominal quota, the part borrowed beyond it, and the limits as markers."""
    within = min(line.usage, line.nominal)
    beyond = max(0, line.usage - line.nominal)
    ceiling = line.nominal + (line.borrowing_limit or 0)
    scale = max(line.nominal, line.usage, ceiling, 1)
    text = line.to_dict()
    markers = [(line.nominal, f"nominal {text['nominal']}")]
    if line.borrowing_limit is not None:
        markers.append((ceiling, f"borrowing limit {text['borrowingLimit']} above nominal"))
    if line.lending_limit is not None:
        markers.append(
            (line.nominal - line.lending_limit, f"keeps {line.nominal - line.lending_limit} (lending limit)")
        )
    segments = [(within, colour, f"used {text['usage']}"), (beyond, "#e8913a", f"borrowed {text['borrowed']}")]
    return bar(segments, scale, markers)


def _limits(line: ResourceLine) -> str:
    text = line.to_dict()
    parts = [f"{text['usage']} / {text['nominal']}"]
    if line.borrowed:
        parts.append(f"borrowed {text['borrowed']}")
    if line.lent:
        parts.append(f"lent {text['lent']}")
    if text["borrowingLimit"] is not None:
        parts.append(f"borrow ≤{text['borrowingLimit']}")
    if text["lendingLimit"] is not None:
        parts.append(f"lend ≤{text['lendingLimit']}")
    return ", ".join(parts)


def queue_row(summary: ClusterQueueSummary, selected: str | None) -> Html:
    colour = queue_colour(summary.name)
    lines = [
        tag(
            "div",
            tag("span", f"{line.flavor}/{line.resource}", class_="fr"),
            resource_bar(line, colour),
            tag("span", _limits(line), class_="amounts"),
            class_="resource",
            data_flavor=line.flavor,
            data_resource=line.resource,
        )
        for line in summary.resources
    ]
    name = link(url("/queues", cq=summary.name), summary.name, class_="cq-link")
    flags = tag("div", [tag("span", flag, class_="flag") for flag in summary.flags]) if summary.flags else ""
    return row(
        Html(f'<td><i class="swatch" style="background:{colour}"></i>{name}{flags}</td>'),
        summary.cohort or "–",
        tag("div", lines) if lines else "no quota",
        Html(f'<td class="admitted">{summary.admitted}</td>'),
        Html(f'<td class="pending">{summary.pending}</td>'),
        data_cq=summary.name,
        class_="selected" if summary.name == selected else None,
    )


def cohort_tree(cohorts: list[CohortSummary]) -> Html:
    by_name = {cohort.name: cohort for cohort in cohorts}

    def node(cohort: CohortSummary) -> Html:
        members = [tag("li", link(url("/queues", cq=name), name)) for name in cohort.cluster_queues]
        children = [node(by_name[child]) for child in cohort.cohorts if child in by_name]
        label = f"{cohort.name} ({len(cohort.cluster_queues)} ClusterQueues)"
        problem = tag("span", cohort.problem, class_="flag") if cohort.problem else ""
        return tag("li", tag("details", tag("summary", label, problem), tag("ul", children + members)))

    roots = [c for c in cohorts if c.parent is None or c.parent not in by_name or c.problem]
    if not roots:
        return tag("p", "no cohorts: every ClusterQueue stands alone", class_="muted")
    return tag("ul", [node(root) for root in roots], class_="tree")


def pending_rows(entries: list[PendingWorkload]) -> list[Html]:
    return [
        row(
            "–" if entry.position_in_cluster_queue is None else entry.position_in_cluster_queue,
            "–" if entry.position_in_local_queue is None else entry.position_in_local_queue,
            link(f"/jobs/{entry.namespace}/{entry.name}", entry.key),
            entry.local_queue,
            entry.priority,
            age(entry.age_seconds),
            ", ".join(f"{r}={q}" for r, q in entry.requests.items()),
            Html(f'<td class="reason">{esc(entry.reason)}</td>'),
            data_workload=entry.key,
            data_state=entry.state,
        )
        for entry in entries
    ]


def pending_section(state: QueueState, cluster_queue: str | None, offset: int) -> Html:
    if cluster_queue is None:
        return tag("section", tag("p", "no ClusterQueue has pending workloads", class_="muted"), id="pending")
    entries = pending_workloads(state, cluster_queue=cluster_queue)
    page = entries[offset : offset + PENDING_PER_PAGE]
    headers = ("in CQ", "in LQ", "workload", "LocalQueue", "priority", "waiting", "requests", "the engine's reason")
    return tag(
        "section",
        tag("h2", f"Pending in {cluster_queue}", tag("small", " (admission order; positions count from 0)")),
        pager("/queues", offset, PENDING_PER_PAGE, len(entries), "pending", cq=cluster_queue, field="pending"),
        table(headers, pending_rows(page), class_="pending-list"),
        id="pending",
        data_cq=cluster_queue,
    )


def totals_line(every: list[ClusterQueueSummary]) -> Html:
    admitted = sum(s.admitted for s in every)
    pending = sum(s.pending for s in every)
    inactive = sum(1 for s in every if not s.active)
    return tag(
        "p",
        tag("b", f"{len(every):,}"),
        " ClusterQueues · ",
        tag("b", f"{admitted:,}", id="total-admitted"),
        " admitted · ",
        tag("b", f"{pending:,}", id="total-pending"),
        " pending" + (f" · {inactive} inactive" if inactive else ""),
        class_="totals",
    )


def filter_form(query: Mapping[str, str], cohorts: list[CohortSummary]) -> Html:
    options = [tag("option", "every cohort", value="")] + [
        tag("option", c.name, value=c.name, selected=c.name == query.get("cohort")) for c in cohorts
    ]
    return tag(
        "form",
        tag("input", name="q", value=query.get("q", ""), placeholder="ClusterQueue name contains"),
        tag("select", options, name="cohort"),
        tag("button", "filter"),
        method="get",
        action="/queues",
        class_="filters",
        data_fragment="1",
    )


def _shown(state: QueueState, every: list[ClusterQueueSummary], query: Mapping[str, str]) -> list[ClusterQueueSummary]:
    cohort, text = query.get("cohort") or None, query.get("q") or None
    if cohort is None and text is None:
        return every
    return cluster_queue_summaries(state, cohort=cohort, name_contains=text)


def queues_page(
    state: QueueState | None,
    summaries: tuple[list[ClusterQueueSummary], list[CohortSummary]],
    query: Mapping[str, str],
    extra_notes: list[str],
    quota: bool,
) -> Page:
    """The page; without ``?cq=`` the pending list is that of the page's queue with most waiting."""
    if state is None:
        message = "No queues here: this dashboard reads local runs only (see Jobs)."
        return Page("Queues", tag("p", message, class_="muted"), "/queues")
    every, cohorts = summaries
    shown = _shown(state, every, query)
    on_pending = query.get("field") == "pending"
    offset = 0 if on_pending else _int(query, "offset")
    page = shown[offset : offset + QUEUES_PER_PAGE]
    busiest = max(page, key=lambda s: s.pending, default=None)
    selected = query.get("cq") or (busiest.name if busiest is not None and busiest.pending else None)
    lines = list(extra_notes)
    if state.admitted_now:
        lines.append(
            f"{len(state.admitted_now)} pending workload(s) fit now; they are counted as the engine would admit them"
        )
    paging = pager(
        "/queues", offset, QUEUES_PER_PAGE, len(shown), "ClusterQueues", q=query.get("q"), cohort=query.get("cohort")
    )
    headers = (
        "ClusterQueue",
        "cohort",
        "usage against nominal quota (marks: nominal, borrowing limit)",
        "admitted",
        "pending",
    )
    content = [
        notes(lines),
        totals_line(every),
        filter_form(query, cohorts),
        tag(
            "div",
            tag("section", paging, table(headers, [queue_row(s, selected) for s in page], class_="queues")),
            tag("aside", tag("h2", "Cohorts"), cohort_tree(cohorts), class_="cohorts"),
            class_="columns",
        ),
    ]
    chosen = next((s for s in every if s.name == selected), None)
    if chosen is not None:
        content.append(pending_section(state, chosen.name, _int(query, "offset") if on_pending else 0))
        content.append(quota_section(chosen, quota))
    return Page("Queues", tag("div", content), "/queues")
