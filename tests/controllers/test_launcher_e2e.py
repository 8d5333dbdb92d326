"""End to end with the sandbox's stand-ins (JobSet and Job controllers, binder, kubelet runner):
admitted Workload -> JobSet with the placement -> Jobs -> gated pods -> ungated onto the placed
nodes -> bound -> Succeeded -> Complete in the TrainJob. Both launcher modes; in ``trainer`` mode
the test plays Trainer's controller (renders the JobSet from the patched TrainJob, mirrors status
with ``trainjob_status``, the function the launcher's jobset mode uses)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fakeapi.fixtures import FakeApi
from kubeflow_trainer_standin import trainer_renders
from launcher_support import NS, TOLERATION, admit, condition, launcher, seed_cluster

from sandbox.standins import Standins
from scheduler.api.topology_assignment import HOSTNAME_LABEL
from scheduler.controllers.launcher.reconciler import LauncherMode
from scheduler.controllers.launcher.trainjob_status import status_differs, trainjob_status
from scheduler.kube import KubeApiError, KubeClient
from tests.eventually import eventually


def node(name: str) -> dict[str, Any]:
    """A Ready node of the flavor's pool, tainted for training (the flavor's toleration admits it)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME_LABEL: name, "pool": "a"}},
        "spec": {"taints": [{"key": TOLERATION["key"], "value": TOLERATION["value"], "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "10"},
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


async def play_trainer(client: KubeClient, stop: asyncio.Event) -> None:
    """Trainer's controller, as much as this test needs: the JobSet of a resumed TrainJob, and its status."""
    while not stop.is_set():
        job = await client.get("TrainJob", "llm", NS)
        if job["spec"].get("suspend") is False:
            try:
                jobset = await client.get("JobSet", "llm", NS)
            except KubeApiError as error:
                if error.status != 404:
                    raise
                rendered = trainer_renders(job)
                rendered["metadata"]["namespace"] = NS
                await client.create(rendered)
            else:
                desired = trainjob_status(job, jobset)
                if status_differs(job.get("status"), desired):
                    await client.patch("TrainJob", "llm", {"status": desired}, NS, status=True)
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("mode", ["jobset", "trainer"])
async def test_admitted_trainjob_runs_on_its_placed_nodes_to_completion(fake_api: FakeApi, mode: LauncherMode) -> None:
    for name in ("n1", "n2", "n3"):
        fake_api.server.seed(node(name))
    trainjob = seed_cluster(fake_api, nodes=3)
    async with launcher(fake_api, mode) as (client, _), Standins(client, run_seconds=0.2):
        stop = asyncio.Event()
        trainer = asyncio.create_task(play_trainer(client, stop)) if mode == "trainer" else None
        try:
            # n1 is the first node by name: a pod the ungater did not pin would land there.
            await admit(client, fake_api, trainjob, [("n3", 1), ("n2", 2)])

            async def complete() -> bool:
                return condition(await client.get("TrainJob", "llm", NS), "Complete") is not None

            await eventually(complete, timeout=15, what="the TrainJob complete")
        finally:
            stop.set()
            if trainer is not None:
                await trainer
        pods = {p["metadata"]["name"]: p for p in (await client.list("Pod", NS)).items}
        placed = {
            name: (p["spec"].get("nodeName"), p["status"].get("phase"))
            for name, p in pods.items()
            if name.startswith("llm-node-0-")
        }
        assert len(placed) == 3, placed
        by_rank = sorted(
            placed.items(),
            key=lambda item: int(pods[item[0]]["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]),
        )
        assert [node_and_phase for _, node_and_phase in by_rank] == [
            ("n3", "Succeeded"),
            ("n2", "Succeeded"),
            ("n2", "Succeeded"),
        ]
        job = await client.get("TrainJob", "llm", NS)
        complete = condition(job, "Complete")
        assert complete is not None
        assert complete["reason"] == "AllJobsCompleted"
