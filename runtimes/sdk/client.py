"""``TrainerClient``: kubeflow's SDK shape over a pluggable backend (see runtimes.sdk.backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from runtimes.sdk.backend import TrainingBackend
from runtimes.sdk.local_backend import LocalBackend, LocalBackendConfig
from runtimes.sdk.types import BuiltinTrainer, CustomTrainer, Initializer, Runtime, TrainJob


@runtime_checkable
class BackendConfig(Protocol):
    """Any backend's config: it builds its backend. ``runtimes`` never imports one; e.g.
    ``trainyard.sdk.KubernetesBackendConfig`` (the cluster backend lives above this layer)."""

    def build_backend(self) -> TrainingBackend: ...


class TrainerClient:
    """Submit and watch TrainJobs. Without a config, jobs run locally; a config with a
    ``build_backend()`` method (``trainyard.sdk.KubernetesBackendConfig``) picks its backend."""

    def __init__(self, backend_config: LocalBackendConfig | BackendConfig | None = None) -> None:
        if backend_config is None or isinstance(backend_config, LocalBackendConfig):
            self.backend: TrainingBackend = LocalBackend(backend_config)
        elif isinstance(backend_config, BackendConfig):
            self.backend = backend_config.build_backend()
        else:
            raise TypeError(
                f"backend_config must be a LocalBackendConfig or a config with build_backend() "
                f"(e.g. trainyard.sdk.KubernetesBackendConfig), got {type(backend_config).__name__}"
            )

    def list_runtimes(self) -> list[Runtime]:
        return self.backend.list_runtimes()

    def get_runtime(self, name: str) -> Runtime:
        return self.backend.get_runtime(name)

    def train(
        self,
        runtime: str | Runtime | None = None,
        initializer: Initializer | None = None,
        trainer: CustomTrainer | BuiltinTrainer | None = None,
    ) -> str:
        """Start a TrainJob; returns its name. Bad input raises ValueError naming the field."""
        return self.backend.train(runtime=runtime, initializer=initializer, trainer=trainer)

    def list_jobs(self, runtime: Runtime | None = None) -> list[TrainJob]:
        return self.backend.list_jobs(runtime)

    def get_job(self, name: str) -> TrainJob:
        return self.backend.get_job(name)

    def get_job_logs(self, name: str, step: str | None = "node-0", follow: bool = False) -> Iterator[str]:
        """Lines of one step's log (``node-0``, ``dataset-initializer``...; None: every step)."""
        return self.backend.get_job_logs(name, step=step, follow=follow)

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] | None = None,
        timeout: float = 600,
        polling_interval: float = 2,
    ) -> TrainJob:
        """Wait until the job is in one of ``status`` (default {"Complete"}); RuntimeError if it
        fails instead, TimeoutError after ``timeout`` seconds."""
        return self.backend.wait_for_job_status(name, status or {"Complete"}, timeout, polling_interval)

    def delete_job(self, name: str) -> None:
        self.backend.delete_job(name)
