"""The seam between ``TrainerClient`` and where jobs run.

Kubeflow's SDK has one client and several backends (``KubernetesBackend``,
``LocalProcessBackend``, ``ContainerBackend``); trainyard keeps that shape. A backend is any
object with the methods of :class:`TrainingBackend`; the client only forwards to it.

- :class:`runtimes.sdk.local_backend.LocalBackend` (here now): renders the TrainJob with the
  same ``render_trainjob`` the cluster path uses and runs it with the local launcher in a
  detached process; status and logs live in the local job store.
- ``trainyard.sdk.KubernetesBackend`` submits the very manifest
  ``runtimes.sdk.trainjobs.build_trainjob`` produces (through the Kubernetes adapter, which
  lives in ``scheduler``), reads status from the TrainJob's conditions and logs from the pods;
  ``trainyard.sdk.TrainerClient(KubernetesBackendConfig(...))`` chooses it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Protocol

from runtimes.sdk.types import BuiltinTrainer, CustomTrainer, Initializer, Runtime, TrainJob

# The statuses a TrainJob view reports, as kubeflow's SDK names them.
STATUSES = frozenset({"Created", "Running", "Complete", "Failed"})


def wait_for_status(
    get_job: Callable[[str], TrainJob], name: str, status: set[str], timeout: float, polling_interval: float
) -> TrainJob:
    """Poll ``get_job(name)`` until its status is one of ``status``; every backend waits this way.

    A Failed job ends the wait with RuntimeError (unless Failed is what is awaited), the deadline
    with TimeoutError; bad arguments raise ValueError naming them.
    """
    if not status <= STATUSES:
        raise ValueError(f"status {sorted(status)} must be a subset of {sorted(STATUSES)}")
    if polling_interval <= 0 or timeout < 0:
        raise ValueError(f"timeout ({timeout}) must be >= 0 and polling_interval ({polling_interval}) > 0")
    deadline = time.monotonic() + timeout
    while True:
        job = get_job(name)
        if job.status in status:
            return job
        if job.status == "Failed":
            raise RuntimeError(f"TrainJob {name} is Failed: {job.message}")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"TrainJob {name} did not reach {sorted(status)} in {timeout}s (now {job.status})")
        time.sleep(polling_interval)


class TrainingBackend(Protocol):
    def list_runtimes(self) -> list[Runtime]: ...

    def get_runtime(self, name: str) -> Runtime: ...

    def train(
        self,
        runtime: str | Runtime | None = None,
        initializer: Initializer | None = None,
        trainer: CustomTrainer | BuiltinTrainer | None = None,
    ) -> str: ...

    def list_jobs(self, runtime: Runtime | None = None) -> list[TrainJob]: ...

    def get_job(self, name: str) -> TrainJob: ...

    def get_job_logs(self, name: str, step: str | None = "node-0", follow: bool = False) -> Iterator[str]: ...

    def wait_for_job_status(self, name: str, status: set[str], timeout: float, polling_interval: float) -> TrainJob: ...

    def delete_job(self, name: str) -> None: ...
