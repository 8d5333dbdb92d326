"""The dashboard of ``trainyard sandbox up --real`` in a real browser, on real components.

TrainJobs submitted with the official ``kubernetes`` client: one admitted, one too big for its
queue's quota left pending. The Queues page's table must show the numbers of the engine loaded
from the cluster as `trainyard queues --kubeconfig` loads it (``cluster_engine``); the Jobs page
the admitted job's queue, status and nodes (its page: which) and the pending one's reason as that engine words it,
and a job admitted while the page is open without a reload. Ctrl-C then stops everything.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as official_client
from kubernetes import config as official_config
from real_support import trainjob

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dashboard"))
from cluster_under_test import cluster_engine, engine_queue_table, shown_queue_table, workload_of
from dashboard_support import browser_page, screenshot
from playwright.async_api import Page

from scheduler.engine import AdmissionEngine, WorkloadInfo, WorkloadState, waiting_reason
from tests.eventually import eventually

pytestmark = pytest.mark.slow

TRAINER = ("trainer.kubeflow.org", "v1alpha1")
DASHBOARD_LINE = re.compile(r"trainyard sandbox: dashboard on (http://\S+)")
RUN_SECONDS = 600.0  # the admitted jobs hold their nodes for the whole test


def _submit(api: official_client.ApiClient, name: str, namespace: str, nodes: int) -> None:
    job = trainjob(name, namespace, nodes=nodes, run_seconds=RUN_SECONDS)
    official_client.CustomObjectsApi(api).create_namespaced_custom_object(*TRAINER, namespace, "trainjobs", job)


async def _settled(kubeconfig: Path, namespace: str, name: str, state: WorkloadState) -> Any:
    """The engine's view of the job once its Workload is in ``state`` (pending: with a reason)."""
    engine = await cluster_engine(kubeconfig)
    found = workload_of(engine, namespace, name)
    if found is None or found[1].state is not state or (state is WorkloadState.PENDING and not found[1].reason):
        await asyncio.sleep(0.3)  # each look lists the cluster: leave its components the CPU between looks
        return None
    return engine, found[1]


async def test_queues_and_jobs_pages_of_sandbox_up_real(tmp_path: Path) -> None:
    kubeconfig, log = tmp_path / "real.kubeconfig", tmp_path / "sandbox-up.log"
    with log.open("w") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "trainyard", "sandbox", "up", "--real", "--kubeconfig-out", str(kubeconfig)],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        assert process.stdout is not None
        printed = (await asyncio.to_thread(process.stdout.readline)).strip()  # once everything runs
        assert Path(printed) == kubeconfig.resolve(), log.read_text()[-3000:]
        address = DASHBOARD_LINE.search(log.read_text())
        assert address, f"sandbox up --real printed no dashboard address: {log.read_text()[-3000:]}"
        api = official_config.new_client_from_config(config_file=str(kubeconfig))
        _submit(api, "held", "team-a", nodes=2)
        await eventually(
            lambda: _settled(kubeconfig, "team-a", "held", WorkloadState.ADMITTED), timeout=90, what="held admitted"
        )
        _submit(api, "waiting", "team-a", nodes=7)  # 7 of the 8 nodes while team-a holds 2
        engine, waiting = await eventually(
            lambda: _settled(kubeconfig, "team-a", "waiting", WorkloadState.PENDING), timeout=60, what="waiting pending"
        )
        async with browser_page() as page:
            await _check_queues_page(page, address[1], engine, waiting)
            await _check_jobs_page(page, address[1], engine, waiting, api)
    finally:
        process.send_signal(signal.SIGINT)
        await asyncio.to_thread(process.communicate, timeout=60)
    assert process.returncode == 0, log.read_text()[-3000:]


async def _check_queues_page(page: Page, url: str, engine: AdmissionEngine, waiting: WorkloadInfo) -> None:
    # the dashboard watches the cluster on its own: its engine has the jobs once team-a's pending row shows
    await page.goto(f"{url}/queues?cq=team-a")
    reason = await page.wait_for_selector(f'#pending tr[data-workload="{waiting.key}"] td.reason')
    assert reason is not None
    assert await reason.text_content() == waiting_reason(engine, waiting)
    await page.goto(f"{url}/queues")
    table = engine_queue_table(engine)
    assert await shown_queue_table(page) == table
    assert ("team-a", "1", "1") in [row[:3] for row in table]  # held admitted, waiting pending
    await screenshot(page, "queues-real")


async def _check_jobs_page(
    page: Page, url: str, engine: AdmissionEngine, waiting: WorkloadInfo, api: official_client.ApiClient
) -> None:
    found = workload_of(engine, "team-a", "held")
    assert found is not None
    held = found[1]
    assert held.admission is not None
    placed = {
        node for gang in held.admission.placements.values() for pod_set in gang.pod_sets for node in pod_set.nodes
    }
    await page.goto(f"{url}/jobs")
    row = await page.wait_for_selector('tr[data-job="team-a/held"]')
    assert row is not None
    cells = [await cell.text_content() for cell in await row.query_selector_all("td")]
    assert cells[2] == held.cluster_queue  # kind, job, queue, status, age, nodes, GPUs
    assert await row.get_attribute("data-status") in ("Admitted", "Running")
    assert cells[5] == str(len(placed)) == "2"
    shown = await page.text_content('tr[data-job="team-a/waiting"][data-status="Pending"] .reason')
    assert shown
    assert shown == waiting_reason(engine, waiting)
    await page.evaluate("window.sameDocument = true")
    _submit(api, "late", "team-b", nodes=1)
    await page.wait_for_function(
        "['Admitted', 'Running'].includes(document.querySelector('tr[data-job=\"team-b/late\"]')?.dataset.status)",
        timeout=60_000,
    )
    assert await page.evaluate("window.sameDocument") is True, "the page was reloaded"
    await screenshot(page, "jobs-real")
    await page.click('tr[data-job="team-a/held"] a.job-link')  # its page names the nodes
    await page.wait_for_selector("table.placement tr[data-node]")
    shown_nodes = await page.eval_on_selector_all(
        "table.placement tr[data-node]", "rows => rows.map(r => r.dataset.node)"
    )
    assert set(shown_nodes) == placed
