"""The SDK's public types, shaped like kubeflow's SDK (``kubeflow.trainer.types``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from urllib.parse import urlparse

from runtimes.sdk.inputs import check_shippable, resource_requirements


@dataclass
class CustomTrainer:
    """Run ``func`` on every rank: its source is shipped and called with ``**func_args``.

    The function must be self-contained (imports inside its body), as with kubeflow's SDK, and
    defined with ``def`` at module level: lambdas, closures, builtins and methods are refused here.
    ``resources_per_node`` is a dict like ``{"cpu": 2, "memory": "4Gi", "gpu": 1}``: the aliases
    ``cpu``, ``memory``, ``gpu`` (→ ``nvidia.com/gpu``) or full Kubernetes resource names.
    """

    func: Callable[..., Any]
    func_args: dict[str, Any] | None = None
    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None
    env: dict[str, str] | None = None

    def __post_init__(self) -> None:
        # Refused here, where the user wrote it, not on every node after submission.
        check_shippable(self.func, "CustomTrainer.func")
        resource_requirements(self.resources_per_node, "CustomTrainer.resources_per_node")


class DataType(StrEnum):
    BF16 = "bf16"
    FP32 = "fp32"


class Loss(StrEnum):
    CEWithChunkedOutputLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss"


class DataFormat(StrEnum):
    JSON = "json"
    CSV = "csv"
    PARQUET = "parquet"
    ARROW = "arrow"
    TEXT = "text"
    XML = "xml"


@dataclass
class LoraConfig:
    apply_lora_to_mlp: bool | None = None
    apply_lora_to_output: bool | None = None
    lora_attn_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj", "output_proj"])
    lora_rank: int | None = None
    lora_alpha: int | None = None
    lora_dropout: float | None = None
    quantize_base: bool | None = None
    use_dora: bool | None = None


@dataclass
class TorchTuneInstructDataset:
    source: DataFormat | None = None
    split: str | None = None
    train_on_input: bool | None = None
    new_system_prompt: str | None = None
    column_map: dict[str, str] | None = None


@dataclass
class TorchTuneConfig:
    """Fine-tuning settings passed to the torchtune runtime's ``tune run`` as config overrides."""

    dtype: DataType | None = None
    batch_size: int | None = None
    epochs: int | None = None
    loss: Loss | None = None
    num_nodes: int | None = None
    peft_config: LoraConfig | None = None
    dataset_preprocess_config: TorchTuneInstructDataset | None = None
    resources_per_node: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.dtype is not None and not isinstance(self.dtype, DataType):
            allowed = ", ".join(d.value for d in DataType)
            raise ValueError(f"TorchTuneConfig.dtype {self.dtype!r} is not supported: use one of {allowed}")
        if self.loss is not None and not isinstance(self.loss, Loss):
            raise ValueError(
                f"TorchTuneConfig.loss {self.loss!r} is not supported: use {Loss.CEWithChunkedOutputLoss.value}"
            )
        for name in ("batch_size", "epochs", "num_nodes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"TorchTuneConfig.{name} must be a positive integer, got {value!r}")
        resource_requirements(self.resources_per_node, "TorchTuneConfig.resources_per_node")


@dataclass
class BuiltinTrainer:
    config: TorchTuneConfig


def _check_uri(kind: str, uri: str, schemes: tuple[str, ...]) -> None:
    scheme = urlparse(uri).scheme
    if scheme not in schemes:
        wanted = " or ".join(f"{s}://" for s in schemes)
        raise ValueError(f"{kind}.storage_uri {uri!r} must start with {wanted}")


@dataclass
class HuggingFaceDatasetInitializer:
    storage_uri: str
    access_token: str | None = None

    def __post_init__(self) -> None:
        _check_uri("HuggingFaceDatasetInitializer", self.storage_uri, ("hf",))


@dataclass
class HuggingFaceModelInitializer:
    storage_uri: str
    access_token: str | None = None
    ignore_patterns: list[str] | None = None

    def __post_init__(self) -> None:
        _check_uri("HuggingFaceModelInitializer", self.storage_uri, ("hf",))


@dataclass
class S3DatasetInitializer:
    storage_uri: str
    endpoint: str | None = None

    def __post_init__(self) -> None:
        _check_uri("S3DatasetInitializer", self.storage_uri, ("s3",))


@dataclass
class S3ModelInitializer:
    storage_uri: str
    endpoint: str | None = None

    def __post_init__(self) -> None:
        _check_uri("S3ModelInitializer", self.storage_uri, ("s3",))


@dataclass
class LocalDatasetInitializer:
    """A dataset on this machine (a path or ``file://`` URI), copied into the job's workspace."""

    storage_uri: str

    def __post_init__(self) -> None:
        _check_uri("LocalDatasetInitializer", self.storage_uri if "://" in self.storage_uri else "file://", ("file",))


@dataclass
class LocalModelInitializer:
    storage_uri: str

    def __post_init__(self) -> None:
        _check_uri("LocalModelInitializer", self.storage_uri if "://" in self.storage_uri else "file://", ("file",))


DatasetInitializer = HuggingFaceDatasetInitializer | S3DatasetInitializer | LocalDatasetInitializer
ModelInitializer = HuggingFaceModelInitializer | S3ModelInitializer | LocalModelInitializer


@dataclass
class Initializer:
    dataset: DatasetInitializer | None = None
    model: ModelInitializer | None = None


@dataclass
class RuntimeTrainer:
    trainer_type: str  # "CustomTrainer" | "BuiltinTrainer"
    framework: str
    num_nodes: int = 1
    image: str | None = None
    command: tuple[str, ...] = ()


@dataclass
class Runtime:
    name: str
    trainer: RuntimeTrainer
    pretrained_model: str | None = None


@dataclass
class Step:
    name: str
    status: str | None
    pod_name: str
    device: str = "cpu"
    device_count: str = "1"


@dataclass
class TrainJob:
    name: str
    runtime: Runtime
    steps: list[Step]
    num_nodes: int
    status: str
    creation_timestamp: datetime | None = None
    message: str | None = None
    trainer_status: dict[str, Any] | None = None
