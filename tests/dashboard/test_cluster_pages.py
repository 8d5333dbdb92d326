"""The dashboard in a real browser against a cluster with queues and jobs: the embedded sandbox
(trainyard's webhook and controllers on the sandbox API server, KWOK pods).

The Queues page here reads the controllers' own engine (as `trainyard serve --dashboard-port` and
`trainyard sandbox up` serve it), so its numbers must be the engine's exactly; the Jobs, job and
Topology pages read the cluster through a kubeconfig, as `trainyard dashboard --kubeconfig` does:
point ``TRAINYARD_DASHBOARD_KUBECONFIG`` at a real cluster's kubeconfig to run that path there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import eventually, screenshot, trainjob
from playwright.async_api import Page

from dashboard import DashboardData, DashboardServer
from sandbox.embedded import Sandbox
from scheduler.engine import AdmissionEngine, WorkloadState, waiting_reason
from scheduler.queues import QueueState, cluster_queue_summaries
from trainyard.cli.dashboard import ClusterMirror, controller_dashboard

pytestmark = pytest.mark.slow


def _engine(sb: Sandbox) -> AdmissionEngine:
    assert sb.controllers is not None
    engine: AdmissionEngine = sb.controllers.service.queue.queue.engine
    return engine


def _workload_of(engine: AdmissionEngine, namespace: str, trainjob: str) -> Any:
    for key, info in engine.workloads.items():
        if info.namespace == namespace and info.name.startswith(f"trainjob-{trainjob}-"):
            return key, info
    return None


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Sandbox]:
    """The sandbox with team-a holding two nodes and a seven-node job of team-a waiting."""
    async with Sandbox(speedup=20.0, kubeconfig_out=tmp_path / "kubeconfig", heartbeat_seconds=None) as sb:
        client = sb.client()
        await client.create(trainjob("held"))
        await eventually(lambda: _admitted(sb, "held"), what="held to be admitted")
        await client.create(trainjob("waiting", nodes=7))

        def waiting() -> bool:
            found = _workload_of(_engine(sb), "team-a", "waiting")
            return found is not None and found[1].state is WorkloadState.PENDING and bool(found[1].reason)

        await eventually(waiting, what="the seven-node job to wait with a reason")
        yield sb


def _admitted(sb: Sandbox, name: str, namespace: str = "team-a") -> bool:
    found = _workload_of(_engine(sb), namespace, name)
    return found is not None and found[1].state is WorkloadState.ADMITTED


async def _served(data: DashboardData) -> DashboardServer:
    server = DashboardServer(data, poll_seconds=0.1)
    await server.start()
    return server


async def test_queue_numbers_equal_the_engines_and_a_pending_reason_shows(cluster: Sandbox, page: Page) -> None:
    assert cluster.controllers is not None
    data = controller_dashboard(cluster.controllers.service, await cluster.api_client(), "sandbox")
    server = await _served(data)
    try:
        await page.goto(f"{server.url}/queues")
        engine = _engine(cluster)
        shown = await page.eval_on_selector_all(
            "table.queues tr[data-cq]",
            "rows => rows.map(r => [r.dataset.cq, r.querySelector('.admitted').textContent,"
            " r.querySelector('.pending').textContent, [...r.querySelectorAll('.amounts')].map(a => a.textContent)])",
        )
        summaries = cluster_queue_summaries(QueueState(engine, time.time()))
        assert [row[:3] for row in shown] == [[s.name, str(s.admitted), str(s.pending)] for s in summaries]
        for row, summary in zip(shown, summaries, strict=True):
            used = [f"{line.to_dict()['usage']} / {line.to_dict()['nominal']}" for line in summary.resources]
            assert [text.split(",")[0] for text in row[3]] == used
        assert {row[0]: row[1] for row in shown}["team-a"] == "1"
        key, info = _workload_of(engine, "team-a", "waiting")
        reason = await page.text_content(f'#pending tr[data-workload="{key}"] td.reason')
        assert reason == waiting_reason(engine, info)
        assert reason
        await screenshot(page, "queues")
    finally:
        await server.stop()


async def _mirror_server(cluster: Sandbox) -> tuple[ClusterMirror, DashboardServer]:
    mirror = await ClusterMirror.connect(cluster.kubeconfig_path, None, quota=False)
    mirror.start(asyncio.Event())
    await eventually(lambda: all(i.synced.is_set() for i in mirror.informers), what="the dashboard's informers")
    return mirror, await _served(mirror.data)


async def test_a_job_admitted_while_the_jobs_page_is_open_appears_without_a_reload(
    cluster: Sandbox, page: Page
) -> None:
    mirror, server = await _mirror_server(cluster)
    try:
        await page.goto(f"{server.url}/jobs")
        await page.wait_for_selector('tr[data-job="team-a/held"]')
        await page.wait_for_selector('tr[data-job="team-a/waiting"][data-status="Pending"]')
        await page.evaluate("window.sameDocument = true")
        await cluster.client().create(trainjob("late", namespace="team-b", nodes=1))
        await page.wait_for_function(
            "['Admitted', 'Running'].includes(document.querySelector('tr[data-job=\"team-b/late\"]')?.dataset.status)"
        )
        assert await page.evaluate("window.sameDocument") is True, "the page was reloaded"
        await screenshot(page, "jobs")
    finally:
        await server.stop()
        await mirror.close()


async def test_a_jobs_page_shows_its_story_placement_and_conditions(cluster: Sandbox, page: Page) -> None:
    mirror, server = await _mirror_server(cluster)
    try:
        await page.goto(f"{server.url}/jobs/team-a/waiting")
        engine = _engine(cluster)
        _, info = _workload_of(engine, "team-a", "waiting")
        reason = await page.text_content("#story .reason")
        assert reason == waiting_reason(engine, info)
        await page.goto(f"{server.url}/jobs/team-a/held")
        _, held = _workload_of(engine, "team-a", "held")
        planned = [node for gang in held.admission.placements.values() for p in gang.pod_sets for node in p.nodes]
        shown = await page.eval_on_selector_all(
            "table.placement tr[data-node]", "rows => rows.map(r => r.dataset.node)"
        )
        assert shown == planned
        assert "Admitted" in (await page.text_content("table.conditions") or "")
        await page.wait_for_selector("aside.logs details[data-rank]")
        await screenshot(page, "job")
    finally:
        await server.stop()
        await mirror.close()


async def test_selecting_a_job_highlights_its_nodes_on_the_topology(cluster: Sandbox, page: Page) -> None:
    mirror, server = await _mirror_server(cluster)
    try:
        await page.goto(f"{server.url}/topology")
        key, held = _workload_of(_engine(cluster), "team-a", "held")
        planned = {node for gang in held.admission.placements.values() for p in gang.pod_sets for node in p.nodes}
        assert not await page.query_selector(".domain.highlight")
        await page.select_option('select[name="job"]', key)
        await page.wait_for_selector(".domain.highlight")
        pods = await page.eval_on_selector_all(
            ".domain.highlight .job-pods", "els => els.map(e => parseInt(e.textContent))"
        )
        assert sum(pods) == 2
        await screenshot(page, "topology")
        while not await page.query_selector(".domain.node"):
            swaps = await page.evaluate("Number(document.body.dataset.swaps || 0)")
            await page.click("a.domain.highlight")
            await page.wait_for_function(f"Number(document.body.dataset.swaps || 0) > {swaps}")
        found = set(await page.eval_on_selector_all(".domain.node.highlight", "els => els.map(e => e.dataset.node)"))
        assert found
        assert found <= planned
        await screenshot(page, "topology-nodes")
    finally:
        await server.stop()
        await mirror.close()
