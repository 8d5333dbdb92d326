"""`bench admission --real` clears the first side's Workloads and Events before the second side starts."""

from __future__ import annotations

import asyncio

from builders import WorkloadBuilder, namespace

from sandbox.real.control_plane import RealCluster
from scheduler.kube import KubeClient, load_api_client
from trainyard.benchmarks.admission_real import clear_side

FINALIZER = "kueue.x-k8s.io/resource-in-use"  # what a stopped Kueue leaves on its Workloads


def test_one_sides_workloads_go_finalizers_and_all_and_the_other_sides_stay(real_cluster: RealCluster) -> None:
    for name in ("kq-clear-a", "ty-clear-a"):
        real_cluster.admin.apply(namespace(name))
    for index in range(3):
        workload = WorkloadBuilder(f"done-{index}", "kq-clear-a").queue("lq").pod_set(count=1, cpu="1").doc()
        workload["metadata"]["finalizers"] = [FINALIZER]
        real_cluster.admin.apply(workload)
    real_cluster.admin.apply(WorkloadBuilder("kept", "ty-clear-a").queue("lq").pod_set(count=1, cpu="1").doc())

    async def clear_and_list() -> tuple[int, list[str]]:
        api = await load_api_client(real_cluster.kubeconfig("admin"))
        try:
            client = KubeClient(api)
            removed = await clear_side(client, "kq-clear-")
            left = [
                f"{o['metadata']['namespace']}/{o['metadata']['name']}"
                for o in (await client.list("Workload")).items
                if str(o["metadata"]["namespace"]).endswith("clear-a")
            ]
            return removed, left
        finally:
            await api.close()

    removed, left = asyncio.run(clear_and_list())
    assert removed >= 3
    assert left == ["ty-clear-a/kept"]
