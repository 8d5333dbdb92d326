"""The Python SDK: ``TrainerClient`` and the trainer/initializer types, shaped like kubeflow's.

Importing it is cheap (no torch): torch runs only in the processes a job starts.
"""

from runtimes.sdk.backend import TrainingBackend
from runtimes.sdk.client import TrainerClient
from runtimes.sdk.local_backend import LocalBackend, LocalBackendConfig
from runtimes.sdk.types import (
    BuiltinTrainer,
    CustomTrainer,
    DataFormat,
    DataType,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LocalDatasetInitializer,
    LocalModelInitializer,
    LoraConfig,
    Loss,
    Runtime,
    RuntimeTrainer,
    S3DatasetInitializer,
    S3ModelInitializer,
    Step,
    TorchTuneConfig,
    TorchTuneInstructDataset,
    TrainJob,
)

__all__ = [
    "BuiltinTrainer",
    "CustomTrainer",
    "DataFormat",
    "DataType",
    "HuggingFaceDatasetInitializer",
    "HuggingFaceModelInitializer",
    "Initializer",
    "LocalBackend",
    "LocalBackendConfig",
    "LocalDatasetInitializer",
    "LocalModelInitializer",
    "LoraConfig",
    "Loss",
    "Runtime",
    "RuntimeTrainer",
    "S3DatasetInitializer",
    "S3ModelInitializer",
    "Step",
    "TorchTuneConfig",
    "TorchTuneInstructDataset",
    "TrainJob",
    "TrainerClient",
    "TrainingBackend",
]
