"""The Simulations page: a simulation's or a what-if's runs, one or two side by side.

``?a=RUN&b=RUN`` picks the runs; each shows its headline figures and four charts drawn in the
browser from ``/simulations/data?run=RUN``: allocation and queue length over time, the wait-time
CDF per ClusterQueue, and the placement tiers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dashboard.html import Html, row, table, tag, url
from dashboard.pages.layout import Page
from dashboard.simruns import RunError, SimulationRun, figures, find_runs, read_series


def run_column(run: SimulationRun) -> Html:
    try:
        series = read_series(run)
    except RunError as error:
        return tag("section", tag("h2", run.name), tag("p", str(error), class_="error"), class_="run")
    return tag(
        "section",
        tag("h2", run.name),
        table(("figure", "value"), [row(label, value) for label, value in figures(series)], class_="figures"),
        tag("div", class_="charts", data_charts=url("/simulations/data", run=run.name)),
        class_="run",
        data_run=run.name,
    )


def picker(runs: list[SimulationRun], chosen: list[str]) -> Html:
    def select(name: str, current: str | None, blank: str) -> Html:
        options = [tag("option", blank, value="")] + [
            tag("option", run.name, value=run.name, selected=run.name == current) for run in runs
        ]
        return tag("select", options, name=name)

    return tag(
        "form",
        select("a", chosen[0] if chosen else None, "a run"),
        select("b", chosen[1] if len(chosen) > 1 else None, "beside it (optional)"),
        tag("button", "show"),
        method="get",
        action="/simulations",
        class_="filters",
    )


def simulations_page(roots: list[Path], query: Mapping[str, str]) -> Page:
    if not roots:
        hint = "Start the dashboard with --sim DIR (the --out DIR of trainyard simulate or queues what-if)."
        return Page("Simulations", tag("p", hint, class_="muted"), "/simulations", live=False)
    runs = find_runs(roots)
    if not runs:
        where = ", ".join(map(str, roots))
        message = (
            f"no series.json under {where}: write one with trainyard simulate --out DIR (or queues what-if --out DIR)"
        )
        return Page("Simulations", tag("p", message, class_="muted"), "/simulations", live=False)
    names = {run.name: run for run in runs}
    chosen = [query[key] for key in ("a", "b") if query.get(key) in names] or [runs[0].name]
    columns = [run_column(names[name]) for name in chosen]
    content = tag(
        "div",
        picker(runs, chosen),
        tag("div", columns, class_="side-by-side" if len(columns) > 1 else "single"),
    )
    return Page("Simulations", content, "/simulations", live=False)
