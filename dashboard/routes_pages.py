"""Handlers of the Queues, Jobs, Topology and Simulations pages, and of the quota form."""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from dashboard.html import tag
from dashboard.pages.jobs import jobs_page
from dashboard.pages.layout import Page
from dashboard.pages.queues import queues_page
from dashboard.pages.quota_form import change_from, check_change, plan_view
from dashboard.pages.simulations import simulations_page
from dashboard.pages.topology import topology_page
from dashboard.respond import DATA_KEY, query, render
from dashboard.simruns import RunError, chart_data, find_runs, read_series
from dashboard.sources import CachedQueues


async def queues(request: web.Request) -> web.StreamResponse:
    data = request.app[DATA_KEY]
    state, every, cohorts = await data.summaries()
    notes = data.queues.notes if isinstance(data.queues, CachedQueues) else []
    page = queues_page(state, (every, cohorts), query(request), notes, data.quota_writer is not None)
    return render(request, page)


async def jobs(request: web.Request) -> web.StreamResponse:
    data = request.app[DATA_KEY]
    return render(request, jobs_page(await data.rows(), query(request)))


async def topology(request: web.Request) -> web.StreamResponse:
    data = request.app[DATA_KEY]
    state = await data.state()
    layouts = await data.layouts.get(state.engine) if state is not None else []
    page = topology_page(state, layouts, query(request))
    return render(request, page, stale=data.layouts.stale)


async def simulations(request: web.Request) -> web.StreamResponse:
    return render(request, simulations_page(request.app[DATA_KEY].simulations, query(request)))


async def simulation_data(request: web.Request) -> web.StreamResponse:
    runs = {run.name: run for run in find_runs(request.app[DATA_KEY].simulations)}
    run = runs.get(request.query.get("run", ""))
    if run is None:
        raise web.HTTPNotFound(text=f"no run {request.query.get('run')!r}; the runs: {', '.join(runs) or 'none'}")
    try:
        return web.json_response(chart_data(read_series(run)))
    except RunError as error:
        raise web.HTTPUnprocessableEntity(text=str(error)) from None


async def set_quota(request: web.Request) -> web.StreamResponse:
    data = request.app[DATA_KEY]
    cluster_queue = request.match_info["cq"]
    if data.quota_writer is None:
        raise web.HTTPForbidden(text="this dashboard is read-only: start it with --allow-set-quota to change quotas")
    origin = request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc != request.host:
        # a form on another site posting here (the browser says where it came from): refused
        raise web.HTTPForbidden(
            text=f"a quota change from {origin} is refused: change quotas on the dashboard's own page"
        )
    state = await data.state()
    if state is None:
        raise web.HTTPNotFound(text="no queues here")
    form = {key: str(value) for key, value in (await request.post()).items()}
    change = change_from(cluster_queue, form)
    plan, problem = check_change(state, change)
    title = f"Quota of {cluster_queue}"
    if plan is None:
        body = tag(
            "div",
            tag("h1", title),
            tag("p", problem, class_="error"),
            tag("a", "back", href=f"/queues?cq={cluster_queue}"),
        )
        return render(request, Page(title, body, "/queues", live=False), status=422)
    if form.get("confirm") != "yes" or not plan.changed:
        return render(
            request, Page(title, tag("div", tag("h1", title), plan_view(plan, change)), "/queues", live=False)
        )
    outcome = await data.quota_writer(plan, change)
    data.changes.bump()
    body = tag(
        "div",
        tag("h1", title),
        tag("p", outcome, class_="applied"),
        tag("a", "back to the queue", href=f"/queues?cq={cluster_queue}"),
    )
    return render(request, Page(title, body, "/queues", live=False))


def add_page_routes(app: web.Application) -> None:
    app.router.add_get("/queues", queues)
    app.router.add_post("/queues/{cq}/quota", set_quota)
    app.router.add_get("/jobs", jobs)
    app.router.add_get("/topology", topology)
    app.router.add_get("/simulations", simulations)
    app.router.add_get("/simulations/data", simulation_data)
