"""A job's page: conditions, events, the Workload's story, its placement, metrics and logs.

The metrics chart and the logs load after the page: the chart from ``.../metrics`` (JSON), each
rank's log from ``.../log`` as Server-Sent Events that keep following while the job runs.
"""

from __future__ import annotations

from typing import Any

from dashboard.html import Html, age, link, row, table, tag, url
from dashboard.job_detail import JobDetail
from dashboard.local_runs import LocalRun
from dashboard.pages.layout import Page
from scheduler.queues import WorkloadStory


def conditions_table(conditions: list[tuple[str, dict[str, Any]]]) -> Html:
    if not conditions:
        return tag("p", "no conditions yet", class_="muted")
    rows = [
        row(owner, c.get("type"), c.get("status"), c.get("reason"), c.get("message"), c.get("lastTransitionTime"))
        for owner, c in conditions
    ]
    return table(("of", "type", "status", "reason", "message", "since"), rows, class_="conditions")


def events_table(events: list[dict[str, Any]] | str) -> Html:
    if isinstance(events, str):
        return tag("p", events, class_="muted")
    if not events:
        return tag("p", "no events", class_="muted")
    rows = [
        row(
            e.get("type"),
            e.get("reason"),
            (e.get("involvedObject") or {}).get("kind"),
            e.get("message"),
            e.get("count") or 1,
            e.get("lastTimestamp") or e.get("eventTime"),
        )
        for e in events
    ]
    return table(("type", "reason", "object", "message", "count", "last seen"), rows, class_="events")


def story_view(story: WorkloadStory | None) -> Html:
    """What `trainyard queues describe` says, as a definition list."""
    if story is None:
        return tag("p", "the engine holds no Workload for this job (finished, or not created yet)", class_="muted")
    items: list[tuple[str, str | int]] = [
        ("workload", story.key),
        ("status", story.status + (" (by this evaluation)" if story.admitted_by_evaluation else "")),
        ("queues", f"LocalQueue {story.local_queue or '–'} → ClusterQueue {story.cluster_queue or '–'}"),
        ("priority", story.priority),
        ("requests", ", ".join(f"{r}={q}" for r, q in story.requests.items()) or "–"),
    ]
    if story.pending is not None:
        positions = story.pending
        items.append(
            (
                "position",
                f"{positions.position_in_cluster_queue} in the ClusterQueue, "
                f"{positions.position_in_local_queue} in the LocalQueue (from 0); waiting {age(positions.age_seconds)}",
            )
        )
        items.append(("why it waits", tag("span", positions.reason or "–", class_="reason")))
    if story.admission is not None:
        items.append(("flavors", ", ".join(f"{r}={f}" for r, f in (story.admission.get("flavors") or {}).items())))
    explanation = story.explanation
    if explanation is not None:
        items.append(("engine's verdict", explanation.words))
        for verdict in explanation.flavors:
            mark = " (chosen)" if verdict.chosen else ""
            items.append((f"flavor {verdict.flavor}{mark}", f"{verdict.words}: " + ("; ".join(verdict.reasons) or "–")))
        items.append(("preemption", explanation.preemption.words))
        for key, reason in explanation.preemption.victims:
            items.append(("would preempt", f"{key} ({reason})"))
        if explanation.placement:
            items.append(("placement", explanation.placement))
    for item in story.interruptions:
        items.append((item.kind, f"{item.reason} {item.when}: {item.message}"))
    return tag("dl", [[tag("dt", label), tag("dd", value)] for label, value in items], _estimate(story), class_="story")


def _estimate(story: WorkloadStory) -> Html:
    """The start estimate, or a link that asks for one (a simulation: only on request)."""
    if story.pending is None:
        return Html("")
    estimate = story.estimate
    if estimate is None:
        ask = link("?estimate=1", "estimate when it could start (simulates the current queues)", id="estimate-link")
        return Html(tag("dt", "estimated start") + tag("dd", ask))
    seconds = estimate.seconds_from_now
    when = "not within the simulated horizon" if seconds is None else f"in about {age(seconds)}"
    return Html(tag("dt", "estimated start") + tag("dd", f"{when} ({estimate.assumption})", id="estimate"))


def placement_table(detail: JobDetail) -> Html:
    if not detail.placement:
        return tag(
            "p", "no placement on topology-aware nodes (pending, or a flavor without a topology)", class_="muted"
        )
    headers = ("pod set", "pod index", "node", *detail.levels)
    rows = [row(p.pod_set, p.index, p.node, *p.domains, data_node=p.node) for p in detail.placement]
    see = link(url("/topology", job=detail.workload_key), "show these nodes on the topology", class_="topology-link")
    return tag("div", see, table(headers, rows, class_="placement"))


def pods_table(pods: list[dict[str, Any]]) -> Html:
    if not pods:
        return Html("")
    rows = [
        row(
            (p.get("metadata") or {}).get("name"),
            (p.get("status") or {}).get("phase"),
            (p.get("spec") or {}).get("nodeName") or "–",
        )
        for p in pods
    ]
    return tag("section", tag("h2", "Pods"), table(("pod", "phase", "node"), rows, class_="pods"))


def log_panes(tabs: list[tuple[str, str, list[str]]]) -> Html:
    """One pane per rank (or pod): the lines so far, then new ones from its event stream."""
    if not tabs:
        return tag("aside", tag("h2", "Logs"), tag("p", "no logs yet", class_="muted"), class_="logs")
    panes = [
        tag(
            "details",
            tag("summary", label),
            tag("pre", "\n".join(lines) + ("\n" if lines else ""), data_stream=stream, class_="log"),
            open=index == 0,
            data_rank=label,
        )
        for index, (label, stream, lines) in enumerate(tabs)
    ]
    return tag("aside", tag("h2", "Logs, per rank (following live)"), panes, class_="logs")


def metrics_block(source: str) -> Html:
    return tag("section", tag("h2", "Training metrics"), tag("div", class_="charts", data_charts=source))


def job_page(detail: JobDetail, events: list[dict[str, Any]] | str, logs: list[tuple[str, str, list[str]]]) -> Page:
    base = f"/jobs/{detail.namespace}/{detail.name}"
    status = detail.story.status if detail.story is not None else "–"
    content = tag(
        "div",
        tag("h1", f"{detail.kind} {detail.namespace}/{detail.name}", tag("span", status, class_="status")),
        tag("section", tag("h2", "The Workload's story"), story_view(detail.story), id="story"),
        tag("section", tag("h2", "Placement"), placement_table(detail), id="placement"),
        pods_table(detail.pods),
        tag("section", tag("h2", "Conditions"), conditions_table(detail.conditions)),
        tag("section", tag("h2", "Events"), events_table(events)),
        metrics_block(f"{base}/metrics"),
    )
    return Page(f"{detail.namespace}/{detail.name}", content, "/jobs", aside=log_panes(logs))


def local_page(run: LocalRun, logs: list[tuple[str, str, list[str]]]) -> Page:
    conditions = [("TrainJob", c) for c in run.conditions]
    content = tag(
        "div",
        tag("h1", f"local run {run.name}", tag("span", run.status, class_="status")),
        tag("p", f"{run.nodes} node(s), {run.gpus or 'no'} GPUs, in {run.directory.path}", class_="muted"),
        tag("section", tag("h2", "Conditions"), conditions_table(conditions)),
        metrics_block(f"/local/{run.name}/metrics"),
    )
    return Page(f"local {run.name}", content, "/jobs", aside=log_panes(logs))
