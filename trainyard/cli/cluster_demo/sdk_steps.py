"""The tour's SDK steps: a data scientist submits TrainJobs with the SDK's Kubernetes backend.

``trainyard.sdk.TrainerClient(KubernetesBackendConfig(kubeconfig=...))`` talks to the sandbox
API server exactly as it would to a cluster: it reads the ClusterTrainingRuntimes, creates the
TrainJob (which the API server sends to trainyard's admission webhook) and polls its status
and pods. The SDK is synchronous, so each step runs it on a worker thread while the sandbox
keeps serving on the tour's event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.cli.cluster_demo.seed import GPUS_PER_NODE, LOCAL_QUEUE
from trainyard.cli.cluster_demo.watch import TourTimeout

if TYPE_CHECKING:
    from trainyard.sdk import TrainerClient

SDK_TEAM = "team-b"
RUNTIME = "torch-distributed"
# More hosts than the whole fabric has (4): no quota, borrowing or preemption can ever admit it.
NEVER_FITS_NODES = 5


def fine_tune(epochs: int = 1) -> None:
    """The function the SDK ships to every node (the sandbox's pods run no container: never called here)."""
    for epoch in range(epochs):
        print(f"epoch {epoch} done")


@dataclass(frozen=True)
class SdkRun:
    """What the SDK saw of a job it submitted and waited for."""

    name: str
    status: str
    runtime: str
    steps: list[tuple[str, str, str]]  # (step, pod, status)


def _client(kubeconfig: Path) -> TrainerClient:
    """team-b's SDK client on the sandbox: its kubeconfig, namespace and LocalQueue."""
    from trainyard.sdk import KubernetesBackendConfig, TrainerClient

    return TrainerClient(KubernetesBackendConfig(kubeconfig=kubeconfig, namespace=SDK_TEAM, queue_name=LOCAL_QUEUE))


def _resources() -> dict[str, object]:
    return {"cpu": 8, "gpu": GPUS_PER_NODE}


def train_and_wait(kubeconfig: Path, timeout: float) -> SdkRun:
    """Submit a one-node job with the SDK and wait, as the SDK's user does, for it to complete."""
    from trainyard.sdk import CustomTrainer

    with _client(kubeconfig) as client:
        trainer = CustomTrainer(func=fine_tune, func_args={"epochs": 2}, num_nodes=1, resources_per_node=_resources())
        name = client.train(runtime=RUNTIME, trainer=trainer)
        try:
            job = client.wait_for_job_status(name, {"Complete"}, timeout=timeout, polling_interval=0.2)
        except (TimeoutError, RuntimeError) as error:
            raise TourTimeout(f"the SDK's TrainJob {SDK_TEAM}/{name}: {error}") from None
        steps = [(step.name, step.pod_name, step.status or "-") for step in job.steps]
        return SdkRun(name=job.name, status=job.status, runtime=job.runtime.name, steps=steps)


def train_never_fits(kubeconfig: Path) -> str:
    """Submit a job bigger than the whole cluster; return the refusal the SDK raises."""
    from trainyard.sdk import CustomTrainer

    with _client(kubeconfig) as client:
        trainer = CustomTrainer(func=fine_tune, num_nodes=NEVER_FITS_NODES, resources_per_node=_resources())
        try:
            name = client.train(runtime=RUNTIME, trainer=trainer)
        except ValueError as refused:
            return str(refused)
    raise TourTimeout(
        f"the API server accepted TrainJob {SDK_TEAM}/{name} for {NEVER_FITS_NODES} × {GPUS_PER_NODE} GPUs, "
        "more than the cluster has: trainyard's webhook should have refused it"
    )


async def in_thread_train_and_wait(kubeconfig: Path, timeout: float) -> SdkRun:
    return await asyncio.to_thread(train_and_wait, kubeconfig, timeout)


async def in_thread_train_never_fits(kubeconfig: Path) -> str:
    return await asyncio.to_thread(train_never_fits, kubeconfig)
