"""`trainyard demo`'s tour through the sandbox: the SDK's Kubernetes backend submits to the sandbox
API server, which calls trainyard's webhook (a job that can never fit is refused) and whose
controllers admit, place and complete the SDK's job. (The whole tour's story is tested in
tests/cli/test_tour.py; these test the SDK and webhook steps on their own, faster.)"""

from __future__ import annotations

import asyncio
import re

import pytest

from sandbox.embedded import LocalCluster
from trainyard.cli.cluster_demo.sdk_steps import NEVER_FITS_NODES, SDK_TEAM, train_and_wait, train_never_fits
from trainyard.cli.cluster_demo.seed import cluster_objects
from trainyard.cli.demo import steps
from trainyard.cli.progress import placement


async def test_the_sdk_job_runs_to_complete_and_a_job_bigger_than_the_cluster_is_refused_by_the_webhook() -> None:
    async with LocalCluster(cluster_objects()) as cluster:
        await cluster.start_webhook()
        await cluster.start_controllers()
        await cluster.start_standins(run_seconds=0.2)

        refusal = await asyncio.to_thread(train_never_fits, cluster.kubeconfig)
        # The API server's wording for a webhook denial, carrying trainyard's never-fits reason.
        assert re.match(r"TrainJob '[a-z][0-9a-f]{11}' was refused: admission webhook \"[a-z.]+\" denied", refusal)
        assert f"needs {NEVER_FITS_NODES * 8} nvidia.com/gpu in flavor h100" in refusal
        assert (await cluster.client.list("TrainJob", SDK_TEAM)).items == []  # nothing was stored

        run = await asyncio.to_thread(train_and_wait, cluster.kubeconfig, 30.0)
        assert run.status == "Complete"
        assert run.runtime == "torch-distributed"
        assert [(step, status) for step, _, status in run.steps] == [("node-0", "Succeeded")]
        trainjob = await cluster.client.get("TrainJob", run.name, SDK_TEAM)
        # The SDK labelled it for the team's LocalQueue, and the Workload was admitted with a placement.
        assert trainjob["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
        workloads = (await cluster.client.list("Workload", SDK_TEAM)).items
        assert len(workloads) == 1
        admission = workloads[0]["status"]["admission"]
        assert admission["clusterQueue"] == SDK_TEAM
        assert admission["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"] == "h100"
        flavor, nodes = placement(workloads[0])  # decoded from the topologyAssignment
        assert flavor == "h100"
        assert len(nodes) == 1
        assert nodes[0] in {"gpu-b0-h0", "gpu-b0-h1", "gpu-b1-h0", "gpu-b1-h1"}


async def test_without_the_webhook_the_job_that_never_fits_is_stored_and_the_tour_says_so() -> None:
    from trainyard.cli.cluster_demo.watch import TourTimeout

    async with LocalCluster(cluster_objects()) as cluster:
        with pytest.raises(TourTimeout, match="trainyard's webhook should have refused it"):
            await asyncio.to_thread(train_never_fits, cluster.kubeconfig)
        assert len((await cluster.client.list("TrainJob", SDK_TEAM)).items) == 1


def test_make_demo_runs_the_tour_through_the_sandbox_quick_or_not() -> None:
    for quick in (True, False):
        assert ["cluster-demo"] in [command for _, command in steps(quick)]
