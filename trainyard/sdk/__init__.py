"""The SDK with its Kubernetes backend: kubeflow's ``TrainerClient(backend_config=...)`` shape.

    from trainyard.sdk import CustomTrainer, KubernetesBackendConfig, TrainerClient

    with TrainerClient(KubernetesBackendConfig(namespace="team-a", queue_name="team-a")) as client:
        name = client.train(runtime="torch-distributed", trainer=CustomTrainer(func=train, num_nodes=2))
        client.wait_for_job_status(name)

``runtimes.sdk.TrainerClient`` accepts the same config; this one also closes the backend.
"""

from __future__ import annotations

from types import TracebackType

from runtimes.sdk import (
    BuiltinTrainer,
    CustomTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LocalBackendConfig,
    Runtime,
    S3DatasetInitializer,
    S3ModelInitializer,
    Step,
    TorchTuneConfig,
    TrainJob,
)
from runtimes.sdk import TrainerClient as _BaseTrainerClient
from trainyard.sdk.kubernetes_backend import KubernetesBackend, KubernetesBackendConfig


class TrainerClient(_BaseTrainerClient):
    """``runtimes.sdk.TrainerClient`` that can be closed (the Kubernetes backend holds a loop
    thread and connections); usable as a context manager."""

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> TrainerClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


__all__ = [
    "BuiltinTrainer",
    "CustomTrainer",
    "HuggingFaceDatasetInitializer",
    "HuggingFaceModelInitializer",
    "Initializer",
    "KubernetesBackend",
    "KubernetesBackendConfig",
    "LocalBackendConfig",
    "Runtime",
    "S3DatasetInitializer",
    "S3ModelInitializer",
    "Step",
    "TorchTuneConfig",
    "TrainJob",
    "TrainerClient",
]
