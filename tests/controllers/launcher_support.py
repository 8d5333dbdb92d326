"""Shared by the launcher tests: a cluster seeded for one TrainJob, the launcher controllers
running against the fake API server, and Workloads written as the queue controller writes them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml
from builders import ResourceFlavorBuilder, namespace
from builders import trainjob as build_trainjob
from fakeapi.fixtures import FakeApi

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from scheduler.api.topology_assignment import HOSTNAME_LABEL, encode_topology_assignment
from scheduler.controllers.launcher.reconciler import LauncherMode
from scheduler.controllers.launcher.wiring import build_launcher_controllers, launcher_watches
from scheduler.controllers.manager import ControllerManager
from scheduler.kube import InformerSettings, KubeClient
from scheduler.kube.backoff import Backoff
from scheduler.trainjob import workload_for_trainjob

ROOT = Path(__file__).resolve().parents[2]
FAST_INFORMERS = InformerSettings(watch_timeout_seconds=30, inactivity_timeout=30.0, backoff=Backoff(0.01, 0.05))
NS = "team-a"
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "train", "effect": "NoSchedule"}


@contextlib.asynccontextmanager
async def launcher(fake_api: FakeApi, mode: LauncherMode = "jobset") -> AsyncIterator[tuple[KubeClient, Any]]:
    api_client = await fake_api.api_client()
    client = KubeClient(api_client)
    manager = ControllerManager(client, launcher_watches(mode), leader=None, informer_settings=FAST_INFORMERS)
    built = build_launcher_controllers(mode, client, manager.cache, workers=2)
    for controller, enqueue in built.registrations:
        manager.add(controller, enqueue=enqueue)
    task = asyncio.create_task(manager.run())
    try:
        yield client, built
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await api_client.close()


def runtime_doc() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "manifests/runtimes/torch_distributed.yaml").read_text()))


def seed_cluster(fake_api: FakeApi, *, nodes: int = 4) -> dict[str, Any]:
    """The runtime, the flavor and a queued, suspended TrainJob of ``nodes`` pods; returns the TrainJob."""
    fake_api.server.seed(namespace(NS))
    fake_api.server.seed(runtime_doc())
    flavor = ResourceFlavorBuilder("rack-flavor").node_labels(pool="a").spec(tolerations=[TOLERATION])
    fake_api.server.seed(flavor.topology("default").doc())
    job = build_trainjob("llm", NS, nodes=nodes, trainer={"image": "trainer:1"}, queue="lq", suspend=True)
    return fake_api.server.seed(job)


def workload_doc(trainjob: dict[str, Any]) -> dict[str, Any]:
    """The Workload the queue controller creates for ``trainjob`` (pod sets from its render)."""
    model = TrainJob.model_validate(trainjob)
    workload = workload_for_trainjob(model, ClusterTrainingRuntime.model_validate(runtime_doc())).to_dict()
    workload.pop("status", None)
    workload["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": model.metadata.name,
            "uid": model.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return workload


def admitted_status(hosts: list[tuple[str, int]]) -> dict[str, Any]:
    """A committed admission of pod set ``node`` onto ``hosts`` (hostname, pods), in rank order."""
    count = sum(pods for _, pods in hosts)
    return {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "node",
                    "flavors": {"cpu": "rack-flavor"},
                    "resourceUsage": {"cpu": str(count)},
                    "count": count,
                    "topologyAssignment": encode_topology_assignment(
                        [HOSTNAME_LABEL], [([host], pods) for host, pods in hosts]
                    ),
                }
            ],
        },
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "ok",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "ok",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    }


EVICTED_STATUS = {
    "admission": None,
    "conditions": [
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Preempted",
            "message": "p",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        },
        {
            "type": "Admitted",
            "status": "False",
            "reason": "Preempted",
            "message": "p",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        },
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "Preempted to accommodate a workload",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        },
        {
            "type": "Preempted",
            "status": "True",
            "reason": "InClusterQueue",
            "message": "p",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        },
    ],
}


async def admit(client: KubeClient, fake_api: FakeApi, trainjob: dict[str, Any], hosts: list[tuple[str, int]]) -> str:
    workload = fake_api.server.seed(workload_doc(trainjob))
    name = workload["metadata"]["name"]
    await client.patch("Workload", name, {"status": admitted_status(hosts)}, NS, status=True)
    return str(name)


def gated_pod(jobset: dict[str, Any], completion: int, job_index: int = 0) -> dict[str, Any]:
    """A pod as the Job controller creates it from the JobSet's ``node`` template."""
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    labels = {
        **template["metadata"]["labels"],
        "jobset.sigs.k8s.io/jobset-name": jobset["metadata"]["name"],
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/job-index": str(job_index),
        "batch.kubernetes.io/job-completion-index": str(completion),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{jobset['metadata']['name']}-node-{job_index}-{completion}",
            "namespace": NS,
            "labels": labels,
            "annotations": {
                **template["metadata"]["annotations"],
                "batch.kubernetes.io/job-completion-index": str(completion),
            },
        },
        "spec": template["spec"],
    }


def condition(document: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for entry in (document.get("status") or {}).get("conditions") or ():
        if entry.get("type") == kind:
            return dict(entry)
    return None


def writes_since(fake_api: FakeApi, start: int) -> list[str]:
    """The non-status writes the server answered since request ``start``."""
    return [
        f"{r.method} {r.path}"
        for r in fake_api.server.requests[start:]
        if r.method in ("POST", "PUT", "PATCH", "DELETE") and not r.path.endswith("/status")
    ]
