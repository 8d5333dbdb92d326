"""The Simulations page and a local run's page in a real browser: charts drawn from the data the
server sends, two runs side by side, and a rank's log followed while it is written."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from dashboard_support import screenshot
from playwright.async_api import Page

from dashboard import DashboardData, DashboardServer
from runtimes.examples.metrics import format_metrics_line
from runtimes.local import LocalJobStore, StatusRecorder
from simulations.cluster_spec import ClusterSpec, QueueSpec, TeamSpec
from simulations.report import write_plots
from simulations.scenarios import Scenario, build
from simulations.simulator import Simulation
from simulations.workloads import SyntheticWorkload, TeamLoad

pytestmark = pytest.mark.slow

SMALL = Scenario(
    name="small",
    cluster=ClusterSpec(zones=1, spines_per_zone=1, blocks_per_spine=2, nodes_per_block=4),
    queues=QueueSpec(teams=(TeamSpec("team-a", 0.5), TeamSpec("team-b", 0.5))),
    workload=SyntheticWorkload(
        jobs=60, mix="philly", load=2.0, max_duration=3600.0, teams=(TeamLoad("team-a", 2.0), TeamLoad("team-b", 1.0))
    ),
    sample_seconds=60.0,
)


async def _served(data: DashboardData) -> DashboardServer:
    server = DashboardServer(data, poll_seconds=0.1)
    await server.start()
    return server


async def test_two_simulation_runs_are_drawn_side_by_side(tmp_path: Path, page: Page) -> None:
    for seed in (1, 2):
        result = Simulation(build(dataclasses.replace(SMALL, name=f"small-seed-{seed}")), seed).run()
        write_plots(result, tmp_path / "out" / f"seed-{seed}")
    server = await _served(DashboardData("simulations", simulations=[tmp_path / "out"]))
    try:
        await page.goto(f"{server.url}/simulations?a=out/seed-1&b=out/seed-2")
        for run in ("out/seed-1", "out/seed-2"):
            charts = f'section[data-run="{run}"] .charts'
            await page.wait_for_selector(f'{charts}[data-drawn="4"]')
            drawn = await page.eval_on_selector_all(
                f"{charts} figure.chart",
                "figures => figures.map(f => [f.dataset.chart, f.querySelectorAll('path.series, rect.bar-rect').length])",
            )
            assert [name for name, _ in drawn] == ["allocation", "queues", "waits", "tiers"]
            assert all(count > 0 for _, count in drawn), drawn
        scenario = await page.text_content('section[data-run="out/seed-2"] table.figures')
        assert "small-seed-2" in (scenario or "")
        await screenshot(page, "simulations")
    finally:
        await server.stop()


async def test_a_local_runs_log_is_followed_live_and_its_metrics_charted(tmp_path: Path, page: Page) -> None:
    store = LocalJobStore(tmp_path / "home")
    job = store.job("ddp")
    job.create()
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "ddp"}}
    trainjob["spec"] = {"trainer": {"numNodes": 2}}
    recorder = StatusRecorder(job, trainjob)
    recorder.condition("Running", True, "Running", "2 nodes x 1 rank")
    with job.log_file(None).open("a") as log:
        log.write("[node-0/rank-0] starting\n[node-1/rank-1] starting\n")
        for step in range(1, 6):
            values = {
                "step": step,
                "loss": 1.0 / step,
                "samples_per_second": 100.0 + step,
                "progress_percentage": 20 * step,
            }
            log.write(f"[node-0/rank-0] {format_metrics_line(values)}\n")
    server = await _served(DashboardData("local runs", local=store))
    try:
        await page.goto(f"{server.url}/jobs")
        assert await page.get_attribute('tr[data-job="local/ddp"]', "data-status") == "Running"
        await page.goto(f"{server.url}/local/ddp")
        await page.wait_for_selector('.charts[data-drawn="3"]')
        loss = await page.eval_on_selector('figure[data-chart="loss"] path.series', "p => p.getAttribute('d')")
        assert loss.count("L") == 4, "five reports of the loss, one line through them"
        rank = 'details[data-rank="node-1/rank-1"] pre'
        assert (await page.text_content(rank) or "").strip() == "starting"
        with job.log_file(None).open("a") as log:
            log.write("[node-1/rank-1] epoch 1 done\n[node-0/rank-0] not this rank\n")
        await page.wait_for_function(f"document.querySelector('{rank}').textContent.includes('epoch 1 done')")
        assert "not this rank" not in (await page.text_content(rank) or "")
        await page.wait_for_selector('.charts[data-drawn="3"]')
        await screenshot(page, "local-run")
    finally:
        await server.stop()
