"""Turn SDK objects into a TrainJob manifest (the same one a Kubernetes backend would submit).

- ``CustomTrainer``: the function's source (``inspect.getsource``) goes into a generated
  entrypoint that calls it with ``**func_args``; the trainer command is ``torchrun <file>``
  for torch runtimes and ``python <file>`` otherwise, like kubeflow's SDK.
- ``BuiltinTrainer(TorchTuneConfig)``: ``tune run`` with config overrides as args; the torch
  plugin of the render adds the recipe, config and rendezvous (Trainer's torchtune handling).
- ``Initializer``: ``spec.initializer.dataset/model.storageUri``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import string
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from runtimes.sdk.inputs import resource_requirements, shippable_source
from runtimes.sdk.types import (
    BuiltinTrainer,
    CustomTrainer,
    HuggingFaceDatasetInitializer,
    Initializer,
    LocalDatasetInitializer,
    LocalModelInitializer,
    LoraConfig,
    TorchTuneConfig,
    TorchTuneInstructDataset,
)

DATASET_PATH = "/workspace/dataset"
TORCHTUNE_COMMAND = ["tune", "run"]


def new_job_name() -> str:
    """A random letter then 11 hex characters, as kubeflow's SDK names jobs."""
    return secrets.choice(string.ascii_lowercase) + secrets.token_hex(6)[:11]


def entrypoint_source(trainer: CustomTrainer) -> str:
    """A Python file that defines the user's function and calls it with its arguments."""
    func = trainer.func
    source = shippable_source(func)
    try:
        arguments = json.dumps(trainer.func_args or {})
    except TypeError as error:
        raise ValueError(f"CustomTrainer.func_args must be JSON-serialisable: {error}") from None
    return (
        f"{source}\n\nif __name__ == '__main__':\n    import json\n    {func.__name__}(**json.loads({arguments!r}))\n"
    )


def resources(values: dict[str, Any] | None, field: str = "resources_per_node") -> dict[str, Any] | None:
    """``{"cpu": 2, "gpu": 1}`` → requests = limits, ``gpu`` spelled ``nvidia.com/gpu``; unknown
    names (``gpus``) and bad amounts raise ValueError naming ``field``."""
    return resource_requirements(values, field)


def _lora_args(config: LoraConfig) -> list[str]:
    fields = (
        "apply_lora_to_mlp",
        "apply_lora_to_output",
        "lora_rank",
        "lora_alpha",
        "lora_dropout",
        "quantize_base",
        "use_dora",
    )
    args = [f"model.{name}={getattr(config, name)}" for name in fields if getattr(config, name) is not None]
    if config.lora_attn_modules:
        args.append(f"model.lora_attn_modules=[{','.join(config.lora_attn_modules)}]")
    return args


def _dataset_args(config: TorchTuneInstructDataset) -> list[str]:
    args = []
    if config.source is not None:
        args.append(f"dataset.source={config.source.value}")
    if config.split is not None:
        args.append(f"dataset.split={config.split}")
    if config.train_on_input is not None:
        args.append(f"dataset.train_on_input={config.train_on_input}")
    if config.new_system_prompt is not None:
        args.append(f"dataset.new_system_prompt={config.new_system_prompt}")
    if config.column_map:
        pairs = ",".join(f"{k}:{v}" for k, v in config.column_map.items())
        args.append(f"dataset.column_map={{{pairs}}}")
    return args


def torchtune_args(config: TorchTuneConfig, initializer: Initializer | None = None) -> list[str]:
    """The ``tune run`` config overrides for ``config`` (kubeflow SDK's rendering)."""
    args = []
    if config.dtype is not None:
        args.append(f"dtype={config.dtype.value}")
    if config.batch_size is not None:
        args.append(f"batch_size={config.batch_size}")
    if config.epochs is not None:
        args.append(f"epochs={config.epochs}")
    if config.loss is not None:
        args.append(f"loss={config.loss.value}")
    if initializer is not None and isinstance(initializer.dataset, HuggingFaceDatasetInitializer):
        # hf://<org>/<repo>/<path>: the path inside the repository (the org is the URI's host)
        relative = re.sub(r"^/[^/]+", "", urlparse(initializer.dataset.storage_uri).path)
        if relative:
            key = "data_files" if "." in relative else "data_dir"
            args.append(f"dataset.{key}={os.path.join(DATASET_PATH, relative.lstrip('/'))}")
    if config.peft_config is not None:
        args.extend(_lora_args(config.peft_config))
    if config.dataset_preprocess_config is not None:
        args.extend(_dataset_args(config.dataset_preprocess_config))
    return args


def _storage_uri(value: Any) -> str:
    uri = str(value.storage_uri)
    if isinstance(value, LocalDatasetInitializer | LocalModelInitializer) and "://" not in uri:
        uri = "file://" + str(Path(uri).expanduser().resolve())
    return uri


def build_trainjob(
    name: str,
    runtime_name: str,
    framework: str,
    trainer: CustomTrainer | BuiltinTrainer | None,
    initializer: Initializer | None = None,
    script_path: Path | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    """The TrainJob manifest; for a CustomTrainer the entrypoint is expected at ``script_path``."""
    spec: dict[str, Any] = {"runtimeRef": {"name": runtime_name}}
    trainer_spec: dict[str, Any] = {}
    if isinstance(trainer, CustomTrainer):
        if script_path is None:
            raise ValueError("a CustomTrainer needs the path its entrypoint is written to")
        launcher = ["torchrun"] if framework == "torch" else ["python"]
        trainer_spec["command"] = [*launcher, str(script_path)]
        if trainer.num_nodes is not None:
            trainer_spec["numNodes"] = trainer.num_nodes
        if trainer.env:
            trainer_spec["env"] = [{"name": k, "value": str(v)} for k, v in trainer.env.items()]
        if (requested := resources(trainer.resources_per_node, "CustomTrainer.resources_per_node")) is not None:
            trainer_spec["resourcesPerNode"] = requested
    elif isinstance(trainer, BuiltinTrainer):
        if framework != "torchtune":
            raise ValueError(
                f"BuiltinTrainer(TorchTuneConfig) needs a torchtune runtime; runtime {runtime_name!r} has "
                f"framework {framework!r}"
            )
        config = trainer.config
        trainer_spec["command"] = list(TORCHTUNE_COMMAND)
        trainer_spec["args"] = torchtune_args(config, initializer)
        if config.num_nodes is not None:
            trainer_spec["numNodes"] = config.num_nodes
        if (requested := resources(config.resources_per_node, "TorchTuneConfig.resources_per_node")) is not None:
            trainer_spec["resourcesPerNode"] = requested
    elif trainer is not None:
        raise ValueError(f"trainer must be a CustomTrainer or a BuiltinTrainer, got {type(trainer).__name__}")
    if trainer_spec:
        spec["trainer"] = trainer_spec
    if initializer is not None:
        init: dict[str, Any] = {}
        if initializer.dataset is not None:
            init["dataset"] = {"storageUri": _storage_uri(initializer.dataset)}
        if initializer.model is not None:
            init["model"] = {"storageUri": _storage_uri(initializer.model)}
        if init:
            spec["initializer"] = init
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
