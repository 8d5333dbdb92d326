"""The Topology page: one flavor's domains at one level, GPUs by queue, fragmentation, a job's nodes.

``?flavor=F&path=a/b`` shows the children of domain ``a/b`` of flavor F (the top level without
a path); each box drills down, and at the hostname level each node shows one cell per GPU.
``?job=NS/NAME`` highlights the domains and nodes holding that job's pods.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.html import Html, link, tag, url
from dashboard.pages.layout import Page, bar, queue_colour
from dashboard.topology import (
    Domain,
    FlavorLayout,
    domains_under,
    flavor_total,
    job_nodes,
    node_states,
    smallest_pending_gang,
    usage_by_node,
)
from scheduler.queues import QueueState

PATH_SEPARATOR = "/"
COLOURS = {"free": "#cfe8cf", "fragmented": "#f3b25b", "unavailable": "#5b5b5b"}


def _colour(state: str) -> str:
    return COLOURS.get(state) or queue_colour(state)


def domain_bar(domain: Domain) -> Html:
    segments = [(gpus, queue_colour(queue), f"{queue}: {gpus} GPUs") for queue, gpus in sorted(domain.used.items())]
    free = max(0, domain.free)
    segments += [
        (free - domain.fragmented, COLOURS["free"], f"free: {free - domain.fragmented}"),
        (domain.fragmented, COLOURS["fragmented"], f"fragmented: {domain.fragmented}"),
        (domain.unavailable, COLOURS["unavailable"], f"unavailable: {domain.unavailable}"),
    ]
    return bar(segments, domain.gpus)


def _figures(domain: Domain) -> str:
    used = sum(domain.used.values())
    return (
        f"{domain.nodes:,} nodes · {domain.gpus:,} GPUs · {used:,} used · {max(0, domain.free):,} free"
        f" ({domain.fragmented:,} fragmented) · {domain.unavailable:,} unavailable"
    )


def domain_box(domain: Domain, flavor: str, job: str | None, node_level: bool) -> Html:
    classes = "domain" + (" highlight" if domain.job_pods else "") + (" node" if node_level else "")
    job_note = tag("span", f"{domain.job_pods} pod(s) of {job}", class_="job-pods") if domain.job_pods else ""
    if node_level:
        cells = [
            tag(
                "i",
                class_=f"gpu {state if state in COLOURS else 'used'}",
                style=f"background:{_colour(state)}",
                title=state,
            )
            for state in domain.cells
        ]
        return tag(
            "div",
            tag("b", domain.label),
            job_note,
            tag("div", cells, class_="gpus"),
            class_=classes,
            data_node=domain.label,
        )
    target = url("/topology", flavor=flavor, path=PATH_SEPARATOR.join(domain.path), job=job)
    return tag(
        "a",
        tag("b", domain.label),
        job_note,
        domain_bar(domain),
        tag("small", _figures(domain)),
        href=target,
        class_=classes,
        data_domain=PATH_SEPARATOR.join(domain.path),
        data_fragmented=domain.fragmented,
        data_free=max(0, domain.free),
        data_fragment="1",
    )


def legend(queues: list[str]) -> Html:
    entries = [(q, queue_colour(q)) for q in queues] + list(COLOURS.items())
    return tag(
        "p",
        [tag("span", tag("i", class_="swatch", style=f"background:{c}"), name, class_="key") for name, c in entries],
        class_="legend",
    )


def breadcrumb(flavor: str, path: tuple[str, ...], levels: tuple[str, ...], job: str | None) -> Html:
    crumbs = [link(url("/topology", flavor=flavor, job=job), flavor, data_fragment="1")]
    for depth, value in enumerate(path):
        target = url("/topology", flavor=flavor, path=PATH_SEPARATOR.join(path[: depth + 1]), job=job)
        crumbs += [Html(" › "), link(target, f"{levels[depth]}={value}", data_fragment="1")]
    return tag("p", crumbs, class_="crumbs")


def job_form(flavor: str, path: str, job: str | None, choices: list[str]) -> Html:
    options = [tag("option", "select a job to highlight its nodes", value="")] + [
        tag("option", key, value=key, selected=key == job) for key in choices
    ]
    return tag(
        "form",
        tag("input", type="hidden", name="flavor", value=flavor),
        tag("input", type="hidden", name="path", value=path),
        tag("select", options, name="job", data_autosubmit="1"),
        tag("noscript", tag("button", "show")),
        method="get",
        action="/topology",
        class_="filters",
        data_fragment="1",
    )


def _pick(layouts: list[FlavorLayout], query: Mapping[str, str]) -> tuple[FlavorLayout, tuple[str, ...]]:
    chosen = next((layout for layout in layouts if layout.flavor == query.get("flavor")), layouts[0])
    raw = [part for part in query.get("path", "").split(PATH_SEPARATOR) if part]
    path = tuple(raw[: len(chosen.levels) - 1])
    return chosen, path


def topology_page(state: QueueState | None, layouts: list[FlavorLayout], query: Mapping[str, str]) -> Page:
    if state is None or not layouts:
        return Page("Topology", tag("p", "no nodes known to the engine", class_="muted"), "/topology")
    engine = state.engine
    layout, path = _pick(layouts, query)
    job = query.get("job") or None
    used = usage_by_node(engine)
    gang = smallest_pending_gang(engine)
    states = node_states(layout, used, gang)
    highlighted = job_nodes(engine, job)
    total = flavor_total(layout, states, used, highlighted)
    level, domains = domains_under(layout, states, used, path, highlighted)
    node_level = len(path) == len(layout.levels) - 1
    tabs = [
        link(
            url("/topology", flavor=lay.flavor, job=job),
            lay.flavor,
            class_="current" if lay is layout else None,
            data_fragment="1",
        )
        for lay in layouts
    ]
    gang_note = (
        f"fragmented: free GPUs that cannot host the smallest pending gang, {gang.pods} pod(s) × {gang.per_pod} GPUs ({gang.workload})"
        if gang is not None
        else "no pending gang asks for GPUs: nothing counts as fragmented"
    )
    admitted = sorted(
        info.key for info in engine.all_workloads() if info.admission is not None and info.admission.placements
    )
    content = tag(
        "div",
        tag("p", tabs, class_="tabs"),
        tag("p", tag("b", layout.flavor), " · ", _figures(total), class_="totals", id="flavor-total"),
        tag("p", gang_note, class_="muted", id="fragmentation"),
        job_form(layout.flavor, PATH_SEPARATOR.join(path), job, admitted[:500]),
        legend(sorted({q for d in domains for q in d.used})),
        breadcrumb(layout.flavor, path, layout.levels, job),
        tag("h2", f"{len(domains):,} × {level}"),
        tag("div", [domain_box(d, layout.flavor, job, node_level) for d in domains], class_="domains"),
    )
    return Page("Topology", content, "/topology")
