"""Handlers of a job's page, its metrics and its log streams (cluster jobs and local runs)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from aiohttp import web

from dashboard.data import DashboardData
from dashboard.html import tag, url
from dashboard.job_detail import JobDetail, metric_charts, metrics_from_lines, resolve
from dashboard.local_runs import LocalRun, follow_rank, metrics_series, rank_lines, ranks, read_run
from dashboard.pages.job import job_page, local_page
from dashboard.pages.layout import Page
from dashboard.respond import DATA_KEY, STREAMS_KEY, render
from dashboard.streams import line_feed
from scheduler.kube import KubeError
from scheduler.queues import QueueState, StartEstimate
from simulations.whatif import estimate_start

EVENTS_TIMEOUT = 5.0
NODE_CONTAINER = "node"


def _not_found(request: web.Request, what: str) -> web.Response:
    # live: a job created a moment ago shows as soon as the cache has it
    page = Page("not found", tag("p", what, class_="error"), "/jobs")
    return render(request, page, status=404)


async def _events(data: DashboardData, detail: JobDetail) -> list[dict[str, Any]] | str:
    if data.cluster is None:
        return "events are read from a cluster; this dashboard reads files"
    names = {detail.name} | ({detail.workload_key.partition("/")[2]} if detail.workload_key else set())
    try:
        return await asyncio.wait_for(data.cluster.events(detail.namespace, names), EVENTS_TIMEOUT)
    except (KubeError, OSError, TimeoutError) as error:
        return f"the cluster did not list events: {error}"


def _container(pod: dict[str, Any]) -> str:
    names = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    return NODE_CONTAINER if NODE_CONTAINER in names else (names[0] if names else NODE_CONTAINER)


async def _estimated(state: QueueState | None, detail: JobDetail) -> None:
    """The story with an estimate of when the job could start, as `trainyard queues describe` gives it:
    the current queues simulated with no new arrivals (in a thread: it is a whole simulation)."""
    story = detail.story
    if state is None or story is None or story.pending is None or detail.workload_key is None:
        return
    if not state.objects:  # the controllers' live engine: no objects to rehearse from
        note = "run trainyard queues describe with --kubeconfig: this dashboard reads the controllers' engine"
        detail.story = replace(story, estimate=StartEstimate(None, note))
        return
    estimate = await asyncio.to_thread(estimate_start, state, detail.workload_key)
    detail.story = replace(story, estimate=estimate)


async def job(request: web.Request) -> web.StreamResponse:
    data = request.app[DATA_KEY]
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    state = await data.state()
    found = resolve(data, state, namespace, name)
    if found is None:
        return _not_found(request, f"no TrainJob or Workload {namespace}/{name}")
    if isinstance(found, str):
        raise web.HTTPFound(f"/jobs/{namespace}/{found}")
    estimate = request.query.get("estimate") == "1"
    if estimate:
        await _estimated(state, found)
    base = f"/jobs/{namespace}/{name}"
    no_lines: list[str] = []  # a pod's log arrives through its stream, from the start
    logs = [
        (str(pod["metadata"]["name"]), url(f"{base}/log", pod=pod["metadata"]["name"]), no_lines) for pod in found.pods
    ]
    if data.cluster is None:
        logs = []
    page = job_page(found, await _events(data, found), logs)
    return render(request, replace(page, live=not estimate))


async def _pod_log_lines(data: DashboardData, namespace: str, pod: str, follow: bool) -> AsyncIterator[str]:
    if data.cluster is None or data.objects is None:
        raise ValueError("pod logs are read from a cluster; this dashboard reads files")
    document = data.objects.get("Pod", pod, namespace)
    if document is None:
        raise ValueError(f"no pod {namespace}/{pod}")
    try:
        async for line in data.cluster.pod_log(namespace, pod, _container(document), follow=follow):
            yield line
    except KubeError as error:
        raise ValueError(f"the cluster does not serve the log of pod {pod}: {error}") from None


async def job_log(request: web.Request) -> web.StreamResponse:
    data = request.app[DATA_KEY]
    lines = _pod_log_lines(data, request.match_info["namespace"], request.query.get("pod", ""), follow=True)
    return await line_feed(request, request.app[STREAMS_KEY], lines)


async def job_metrics(request: web.Request) -> web.StreamResponse:
    data = request.app[DATA_KEY]
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    found = resolve(data, await data.state(), namespace, name)
    if not isinstance(found, JobDetail) or not found.pods:
        return web.json_response({})
    lines: list[str] = []
    try:
        async for line in _pod_log_lines(data, namespace, str(found.pods[0]["metadata"]["name"]), follow=False):
            lines.append(line)
    except ValueError as error:
        return web.json_response({"note": str(error)})
    return web.json_response(metric_charts(metrics_from_lines(lines)))


def _local_run(request: web.Request) -> LocalRun | None:
    data = request.app[DATA_KEY]
    return read_run(data.local, request.match_info["name"]) if data.local is not None else None


async def local_run(request: web.Request) -> web.StreamResponse:
    run = _local_run(request)
    if run is None:
        return _not_found(request, f"no local run {request.match_info['name']!r}")
    tabs = []
    for rank in ranks(run):
        lines, offset = rank_lines(run, rank)
        tabs.append((rank, url(f"/local/{run.name}/log", rank=rank, offset=offset), lines))
    return render(request, local_page(run, tabs))


async def local_log(request: web.Request) -> web.StreamResponse:
    run = _local_run(request)
    if run is None:
        raise web.HTTPNotFound(text=f"no local run {request.match_info['name']!r}")
    try:
        offset = max(0, int(request.query.get("offset", "0")))
    except ValueError:
        offset = 0
    lines = follow_rank(run.directory.log_file(None), request.query.get("rank", ""), offset)
    return await line_feed(request, request.app[STREAMS_KEY], lines)


async def local_metrics(request: web.Request) -> web.StreamResponse:
    run = _local_run(request)
    if run is None:
        raise web.HTTPNotFound(text=f"no local run {request.match_info['name']!r}")
    return web.json_response(metric_charts(metrics_series(run)))


def add_job_routes(app: web.Application) -> None:
    app.router.add_get("/jobs/{namespace}/{name}", job)
    app.router.add_get("/jobs/{namespace}/{name}/log", job_log)
    app.router.add_get("/jobs/{namespace}/{name}/metrics", job_metrics)
    app.router.add_get("/local/{name}", local_run)
    app.router.add_get("/local/{name}/log", local_log)
    app.router.add_get("/local/{name}/metrics", local_metrics)
