"""The cluster the dashboard's browser tests run against: the embedded sandbox by default, or the
cluster of ``TRAINYARD_DASHBOARD_KUBECONFIG`` (a real one with trainyard installed and the
sandbox scenario's queues: team-a..team-d, each namespace's LocalQueue ``default``).

``truth()`` is the engine whose figures the pages must show: the sandbox controllers' own
engine, or on another cluster the queues loaded from its objects as `trainyard queues` loads
them (``cluster_engine``, which the real tier's dashboard test reads too). The jobs a test creates
carry a suffix of their own and are deleted afterwards. ``shown_queue_table`` and
``engine_queue_table`` are the Queues page's table as a person reads it and as the engine has it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Page

from dashboard import DashboardData, DashboardServer
from sandbox.embedded import Sandbox
from scheduler.engine import AdmissionEngine, WorkloadInfo
from scheduler.kube import KubeApiError, KubeClient, close_api_client, load_api_client
from scheduler.queues import QueueState, cluster_queue_summaries, load_state
from tests.builders import kwok_trainjob
from tests.eventually import eventually
from trainyard.cli.dashboard import ClusterMirror, controller_dashboard
from trainyard.cli.queues.cluster_side import read_cluster

KUBECONFIG_ENV = "TRAINYARD_DASHBOARD_KUBECONFIG"
# Each ClusterQueue row: name, admitted, pending, and per resource "usage / nominal" (before the comma).
QueueRow = tuple[str, str, str, list[str]]


async def cluster_engine(kubeconfig: Path) -> AdmissionEngine:
    """The queues of a cluster loaded into an engine as `trainyard queues --kubeconfig` loads them."""
    read = await read_cluster(kubeconfig, None)
    return load_state(read.objects, read.workloads, now=time.time(), namespaces=read.namespaces).engine


def workload_of(engine: AdmissionEngine, namespace: str, trainjob: str) -> tuple[str, WorkloadInfo] | None:
    """The engine's key and record of a TrainJob's Workload (Trainer names it trainjob-NAME-HASH)."""
    for info in engine.all_workloads():
        if info.namespace == namespace and info.name.startswith(f"trainjob-{trainjob}-"):
            return info.key, info
    return None


async def shown_queue_table(page: Page) -> list[QueueRow]:
    shown = await page.eval_on_selector_all(
        "table.queues tr[data-cq]",
        "rows => rows.map(r => [r.dataset.cq, r.querySelector('.admitted').textContent,"
        " r.querySelector('.pending').textContent, [...r.querySelectorAll('.amounts')].map(a => a.textContent)])",
    )
    return [
        (cq, admitted, pending, [text.split(",")[0] for text in amounts]) for cq, admitted, pending, amounts in shown
    ]


def engine_queue_table(engine: AdmissionEngine) -> list[QueueRow]:
    rows: list[QueueRow] = []
    for summary in cluster_queue_summaries(QueueState(engine, time.time())):
        used = [f"{line.to_dict()['usage']} / {line.to_dict()['nominal']}" for line in summary.resources]
        rows.append((summary.name, str(summary.admitted), str(summary.pending), used))
    return rows


@dataclass
class ClusterUnderTest:
    kubeconfig: Path
    client: KubeClient
    sandbox: Sandbox | None
    suffix: str = field(default_factory=lambda: uuid.uuid4().hex[:5])
    created: list[tuple[str, str]] = field(default_factory=list)

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    async def submit(self, base: str, **shape: Any) -> str:
        document = kwok_trainjob(self.name(base), run="1h", **shape)
        await self.client.create(document)
        self.created.append((document["metadata"]["namespace"], document["metadata"]["name"]))
        return self.name(base)

    async def truth(self) -> AdmissionEngine:
        if self.sandbox is not None and self.sandbox.controllers is not None:
            engine: AdmissionEngine = self.sandbox.controllers.service.queue.queue.engine
            return engine
        return await cluster_engine(self.kubeconfig)

    @contextlib.asynccontextmanager
    async def dashboard(self, *, mirror: bool) -> AsyncIterator[DashboardServer]:
        """The dashboard as `trainyard dashboard --kubeconfig` serves it (``mirror``), or, in the
        sandbox, as `trainyard serve --dashboard-port` does: from the controllers' cache and engine."""
        watching = None
        if mirror or self.sandbox is None or self.sandbox.controllers is None:
            watching = await ClusterMirror.connect(self.kubeconfig, None, quota=False)
            watching.start(asyncio.Event())
            data: DashboardData = watching.data
            await eventually(lambda: all(i.synced.is_set() for i in watching.informers), what="the informers")
        else:
            data = controller_dashboard(self.sandbox.controllers.service, await self.sandbox.api_client(), "sandbox")
        server = DashboardServer(data, poll_seconds=0.1)
        await server.start()
        try:
            yield server
        finally:
            await server.stop()
            if watching is not None:
                await watching.close()


@contextlib.asynccontextmanager
async def cluster_under_test(tmp_path: Path) -> AsyncIterator[ClusterUnderTest]:
    configured = os.environ.get(KUBECONFIG_ENV)
    if not configured:
        async with Sandbox(speedup=20.0, kubeconfig_out=tmp_path / "kubeconfig", heartbeat_seconds=None) as sb:
            yield ClusterUnderTest(sb.kubeconfig_path, sb.client(), sb)
        return
    api_client = await load_api_client(Path(configured))
    cluster = ClusterUnderTest(Path(configured), KubeClient(api_client), None)
    try:
        yield cluster
    finally:
        for namespace, name in cluster.created:
            with contextlib.suppress(KubeApiError):
                await cluster.client.delete("TrainJob", name, namespace)
        await close_api_client(api_client)
