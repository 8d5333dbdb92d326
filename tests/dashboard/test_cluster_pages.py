"""The dashboard in a real browser against a cluster with queues and jobs: the embedded sandbox
(trainyard's webhook and controllers on the sandbox API server, KWOK pods), or the cluster of
``TRAINYARD_DASHBOARD_KUBECONFIG`` (``cluster_under_test``).

The Queues page reads the controllers' own engine where they run in the test's process (as
`trainyard serve --dashboard-port` and `trainyard sandbox up` serve it), so its numbers must be
the engine's exactly; the Jobs, job and Topology pages read the cluster through its kubeconfig,
as `trainyard dashboard --kubeconfig` does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cluster_under_test import (
    ClusterUnderTest,
    cluster_under_test,
    engine_queue_table,
    shown_queue_table,
    workload_of,
)
from dashboard_support import screenshot
from playwright.async_api import Page

from scheduler.engine import WorkloadState, waiting_reason
from tests.eventually import eventually

pytestmark = pytest.mark.slow


async def _in_state(cluster: ClusterUnderTest, name: str, state: WorkloadState) -> Any:
    found = workload_of(await cluster.truth(), "team-a", name)
    return (
        found
        if found is not None and found[1].state is state and (state is not WorkloadState.PENDING or found[1].reason)
        else None
    )


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[ClusterUnderTest]:
    """team-a holding two nodes, and a seven-node job of team-a waiting for quota."""
    async with cluster_under_test(tmp_path) as found:
        held = await found.submit("held")
        await eventually(lambda: _in_state(found, held, WorkloadState.ADMITTED), what="held to be admitted")
        waiting = await found.submit("waiting", nodes=7)
        await eventually(lambda: _in_state(found, waiting, WorkloadState.PENDING), what="the big job to wait")
        yield found


async def test_queue_numbers_equal_the_engines_and_a_pending_reason_shows(
    cluster: ClusterUnderTest, page: Page
) -> None:
    async with cluster.dashboard(mirror=False) as server:
        await page.goto(f"{server.url}/queues")
        engine = await cluster.truth()
        assert await shown_queue_table(page) == engine_queue_table(engine)
        key, info = workload_of(engine, "team-a", cluster.name("waiting"))
        await page.goto(f"{server.url}/queues?cq=team-a")
        reason = await page.text_content(f'#pending tr[data-workload="{key}"] td.reason')
        assert reason == waiting_reason(engine, info)
        assert reason
        await screenshot(page, "queues")


async def test_a_job_admitted_while_the_jobs_page_is_open_appears_without_a_reload(
    cluster: ClusterUnderTest, page: Page
) -> None:
    held, waiting = cluster.name("held"), cluster.name("waiting")
    async with cluster.dashboard(mirror=True) as server:
        await page.goto(f"{server.url}/jobs")
        await page.wait_for_selector(f'tr[data-job="team-a/{held}"]')
        await page.wait_for_selector(f'tr[data-job="team-a/{waiting}"][data-status="Pending"]')
        await page.evaluate("window.sameDocument = true")
        late = await cluster.submit("late", namespace="team-b", nodes=1)
        await page.wait_for_function(
            f"['Admitted', 'Running'].includes(document.querySelector('tr[data-job=\"team-b/{late}\"]')?.dataset.status)"
        )
        assert await page.evaluate("window.sameDocument") is True, "the page was reloaded"
        await screenshot(page, "jobs")


async def test_a_jobs_page_shows_its_story_placement_and_conditions(cluster: ClusterUnderTest, page: Page) -> None:
    held, waiting = cluster.name("held"), cluster.name("waiting")
    async with cluster.dashboard(mirror=True) as server:
        await page.goto(f"{server.url}/jobs/team-a/{waiting}")
        engine = await cluster.truth()
        _, info = workload_of(engine, "team-a", waiting)
        assert await page.text_content("#story .reason") == waiting_reason(engine, info)
        await page.goto(f"{server.url}/jobs/team-a/{held}")
        _, admitted = workload_of(engine, "team-a", held)
        planned = [n for gang in admitted.admission.placements.values() for p in gang.pod_sets for n in p.nodes]
        shown = await page.eval_on_selector_all(
            "table.placement tr[data-node]", "rows => rows.map(r => r.dataset.node)"
        )
        assert shown == planned
        assert "Admitted" in (await page.text_content("table.conditions") or "")
        await page.wait_for_selector("aside.logs details[data-rank]")
        await screenshot(page, "job")


async def test_selecting_a_job_highlights_its_nodes_on_the_topology(cluster: ClusterUnderTest, page: Page) -> None:
    async with cluster.dashboard(mirror=True) as server:
        await page.goto(f"{server.url}/topology")
        key, held = workload_of(await cluster.truth(), "team-a", cluster.name("held"))
        planned = {node for gang in held.admission.placements.values() for p in gang.pod_sets for node in p.nodes}
        assert not await page.query_selector(".domain.highlight")
        await page.select_option('select[name="job"]', key)
        await page.wait_for_selector(".domain.highlight")
        pods = await page.eval_on_selector_all(
            ".domain.highlight .job-pods", "els => els.map(e => parseInt(e.textContent))"
        )
        assert sum(pods) == 2
        shot = False  # the first level with more than one domain makes the README's picture
        while not await page.query_selector(".domain.node"):
            if not shot and len(await page.query_selector_all("a.domain")) > 1:
                shot = bool(await screenshot(page, "topology"))
            swaps = await page.evaluate("Number(document.body.dataset.swaps || 0)")
            await page.click("a.domain.highlight")
            await page.wait_for_function(f"Number(document.body.dataset.swaps || 0) > {swaps}")
        found = set(await page.eval_on_selector_all(".domain.node.highlight", "els => els.map(e => e.dataset.node)"))
        assert found
        assert found <= planned
        await screenshot(page, "topology-nodes")
