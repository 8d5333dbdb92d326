"""The Jobs page: every TrainJob, Workload and local run, filterable, newest first, 50 a page."""

from __future__ import annotations

import time
from collections.abc import Mapping

from dashboard.html import Html, age, esc, link, row, table, tag
from dashboard.jobs import STATUSES, JobRow
from dashboard.pages.layout import Page, pager, queue_colour

ROWS_PER_PAGE = 50


def _offset(query: Mapping[str, str]) -> int:
    try:
        return max(0, int(query.get("offset", 0)))
    except ValueError:
        return 0


def job_row(job: JobRow, now: float) -> Html:
    queue = job.cluster_queue or job.local_queue or "–"
    swatch = (
        Html(f'<i class="swatch" style="background:{queue_colour(job.cluster_queue)}"></i>')
        if job.cluster_queue
        else ""
    )
    status = tag("span", job.status, class_=f"status {job.status.lower()}", title=job.reason or None)
    reason = tag("div", job.reason, class_="reason") if job.reason else ""
    return row(
        job.kind,
        link(job.href, f"{job.namespace}/{job.name}", class_="job-link"),
        Html(f"<td>{swatch}{esc(queue)}</td>"),
        Html(f"<td>{status}{reason}</td>"),
        age(now - job.created),
        job.nodes or "–",
        job.gpus or "–",
        data_job=f"{job.namespace}/{job.name}",
        data_status=job.status,
    )


def filter_form(query: Mapping[str, str]) -> Html:
    statuses = [tag("option", "any status", value="")] + [
        tag("option", status, value=status, selected=status == query.get("status")) for status in STATUSES
    ]
    return tag(
        "form",
        tag("input", name="q", value=query.get("q", ""), placeholder="name, namespace or queue contains"),
        tag("select", statuses, name="status"),
        tag("input", name="queue", value=query.get("queue", ""), placeholder="ClusterQueue"),
        tag("button", "filter"),
        method="get",
        action="/jobs",
        class_="filters",
        data_fragment="1",
    )


def jobs_page(rows: list[JobRow], query: Mapping[str, str]) -> Page:
    text, status, queue = query.get("q", ""), query.get("status", ""), query.get("queue", "")
    shown = [r for r in rows if r.matches(text, status, queue)] if (text or status or queue) else rows
    offset = _offset(query)
    now = time.time()
    counts: dict[str, int] = {}
    for job in rows:
        counts[job.status] = counts.get(job.status, 0) + 1
    summary = " · ".join(f"{count:,} {name}" for name, count in sorted(counts.items())) or "no jobs yet"
    content = tag(
        "div",
        tag("p", summary, class_="totals"),
        filter_form(query),
        pager("/jobs", offset, ROWS_PER_PAGE, len(shown), "jobs", q=text, status=status, queue=queue),
        table(
            ("kind", "job", "queue", "status", "age", "nodes", "GPUs"),
            [job_row(job, now) for job in shown[offset : offset + ROWS_PER_PAGE]],
            class_="jobs",
        ),
    )
    return Page("Jobs", content, "/jobs")
