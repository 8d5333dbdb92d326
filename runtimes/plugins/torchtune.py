"""torchtune under the torch ML policy: ``tune run`` gets its recipe, config and rendezvous.

A TrainJob whose trainer command is exactly ``tune run`` (what the SDK's ``BuiltinTrainer``
writes) is a torchtune fine-tune. As Kubeflow Trainer's torch plugin does, the render appends to
that command the rendezvous endpoint (for more than one process), the recipe and ``--config``
file chosen from the node count, the processes per node, the GPUs per node and the LoRA / QLoRA
arguments, and the runtime's own fixed paths (``output_dir=``, ``tokenizer.path=`` ...). The
user's ``args`` stay config overrides (``batch_size=4``). The model comes from the runtime's
name: ``torchtune-llama3.2-1b`` fine-tunes ``llama3_2/1B``.
"""

from __future__ import annotations

from typing import Any

from runtimes.api.trainer import NODE, TrainJob
from runtimes.errors import FieldError
from runtimes.k8s.core import ResourceRequirements
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.podspec import find_container, gpu_count

TORCHTUNE_ENTRYPOINT = ["tune", "run"]

FULL_SINGLE_DEVICE = ("full_finetune_single_device", "_full_single_device")
FULL_DISTRIBUTED_ONE_NODE = ("full_finetune_distributed", "_full")
FULL_DISTRIBUTED_MULTI_NODE = ("full_finetune_distributed", "_full_multinode")
LORA_SINGLE_DEVICE = ("lora_finetune_single_device", "_lora_single_device")
QLORA_SINGLE_DEVICE = ("lora_finetune_single_device", "_qlora_single_device")
LORA_DISTRIBUTED = ("lora_finetune_distributed", "_lora")
QLORA_DISTRIBUTED = ("lora_finetune_distributed", "_qlora")

LORA_ATTN_MODULES = "model.lora_attn_modules"
QUANTIZE_BASE = "model.quantize_base"
USE_DORA = "model.use_dora"
# Paths the runtime owns (where the initializers put the model, where output goes).
IMMUTABLE_CONFIGS = frozenset({"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"})

LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B = "llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B"
SUPPORTED_MODELS = (LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B)
MULTI_NODE_MODELS = (LLAMA3_3_70B,)


def is_torchtune(command: list[str] | None) -> bool:
    return list(command or []) == TORCHTUNE_ENTRYPOINT


def model_from_runtime_name(runtime_name: str) -> str:
    """``torchtune-llama3.2-1b`` → ``llama3_2/1B``; "" when the name is not ``torchtune-<model>-<size>``."""
    parts = runtime_name.split("-")
    if len(parts) != 3:
        return ""
    return f"{parts[1].replace('.', '_')}/{parts[2].upper()}"


def uses_lora(args: list[str]) -> bool:
    return any(LORA_ATTN_MODULES in arg for arg in args)


def uses_qlora(args: list[str]) -> bool:
    """QLoRA is LoRA on a quantized base; DoRA turns it off."""
    if any(USE_DORA in arg for arg in args):
        return False
    return any(QUANTIZE_BASE in arg for arg in args)


def recipe_and_config(
    num_nodes: int, num_proc: str, gpus_per_node: int, args: list[str], model: str
) -> tuple[str, str]:
    """The recipe and config file for this shape of job (Trainer's getRecipeAndConfig)."""
    if num_nodes == 1 and (num_proc == "1" or gpus_per_node == 1):
        if uses_qlora(args):
            recipe, suffix = QLORA_SINGLE_DEVICE
        elif uses_lora(args):
            recipe, suffix = LORA_SINGLE_DEVICE
        else:
            recipe, suffix = FULL_SINGLE_DEVICE
    elif num_nodes == 1 and uses_qlora(args):
        recipe, suffix = QLORA_DISTRIBUTED
    elif num_nodes == 1 and uses_lora(args):
        recipe, suffix = LORA_DISTRIBUTED
    elif num_nodes > 1:
        recipe, suffix = FULL_DISTRIBUTED_MULTI_NODE
    else:
        recipe, suffix = FULL_DISTRIBUTED_ONE_NODE
    return recipe, f"{model}{suffix}"


def gpus_per_node(info: RuntimeInfo, trainjob: TrainJob) -> int:
    """GPUs of one node: the TrainJob's resourcesPerNode, else the runtime's ``node`` container."""
    trainer = trainjob.spec.trainer
    given: ResourceRequirements | None = trainer.resources_per_node if trainer else None
    if given is not None:
        return gpu_count(dict(given.requests)) or gpu_count(dict(given.limits))
    container = _runtime_node_container(info)
    resources = (container or {}).get("resources") or {}
    return gpu_count(resources.get("requests") or {}) or gpu_count(resources.get("limits") or {})


def _runtime_node_container(info: RuntimeInfo) -> dict[str, Any] | None:
    trainer_pod_set = info.trainer_pod_set()
    pod_spec = info.pod_spec(trainer_pod_set.name) if trainer_pod_set is not None else None
    return find_container(pod_spec, NODE) if pod_spec is not None else None


def runtime_overrides(info: RuntimeInfo) -> list[str]:
    """The runtime's fixed paths, written as ``key=value`` items of its ``node`` command."""
    container = _runtime_node_container(info) or {}
    return [str(item) for item in container.get("command") or [] if str(item).split("=", 1)[0] in IMMUTABLE_CONFIGS]


def torchtune_command(
    info: RuntimeInfo, trainjob: TrainJob, num_nodes: int, num_proc: str, rendezvous: str
) -> list[str]:
    """``tune run`` followed by the rendezvous, recipe, config and the runtime's paths."""
    trainer = trainjob.spec.trainer
    args = [str(arg) for arg in (trainer.args if trainer and trainer.args else [])]
    gpus = gpus_per_node(info, trainjob)
    model = model_from_runtime_name(trainjob.spec.runtime_ref.name)
    command = list(TORCHTUNE_ENTRYPOINT)
    several_processes = (
        num_nodes > 1 or (num_proc.isdigit() and int(num_proc) > 1) or (not num_proc.isdigit() and gpus > 1)
    )
    if several_processes:
        command.append(f"--rdzv_endpoint={rendezvous}")
    recipe, config = recipe_and_config(num_nodes, num_proc, gpus, args, model)
    return [*command, recipe, "--config", config, *runtime_overrides(info)]


def validate_torchtune(info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
    """What Trainer rejects for a torchtune job: unknown model, shapes the recipes don't support."""
    trainer = trainjob.spec.trainer
    if trainer is None:
        return []
    errors: list[FieldError] = []
    runtime_name = trainjob.spec.runtime_ref.name
    model = model_from_runtime_name(runtime_name)
    if model not in SUPPORTED_MODELS:
        errors.append(
            FieldError(
                "spec.runtimeRef.name",
                f"{runtime_name!r} names no supported torchtune model ({model or 'none'}): use a runtime "
                f"torchtune-<model>-<size> for one of {', '.join(SUPPORTED_MODELS)}",
            )
        )
    num_nodes = trainer.num_nodes if trainer.num_nodes is not None else 1
    if num_nodes > 1 and model not in MULTI_NODE_MODELS:
        errors.append(
            FieldError("spec.trainer.numNodes", f"is {num_nodes}: must be 1 for the {model or runtime_name} model")
        )
    args = [str(arg) for arg in trainer.args or []]
    if num_nodes > 1 and uses_lora(args):
        errors.append(
            FieldError(
                "spec.trainer.numNodes",
                f"is {num_nodes}: LoRA fine-tuning ({LORA_ATTN_MODULES}) is not supported on more than one node",
            )
        )
    num_proc = "auto" if not isinstance(trainer.num_proc_per_node, int) else str(trainer.num_proc_per_node)
    _, config = recipe_and_config(num_nodes, num_proc, gpus_per_node(info, trainjob), args, model)
    if config.endswith(QLORA_DISTRIBUTED[1]):
        if model == QWEN2_5_1_5B:
            errors.append(FieldError("spec.runtimeRef.name", f"QLoRA is not supported for the {model} model"))
        if model in (LLAMA3_2_1B, LLAMA3_2_3B):
            errors.append(
                FieldError("spec.trainer.numProcPerNode", f"must be auto or 1 for the {model} model with QLoRA")
            )
            errors.append(
                FieldError(
                    "spec.trainer.resourcesPerNode",
                    f"must request exactly 1 GPU per node for the {model} model with QLoRA",
                )
            )
    for index, arg in enumerate(args):
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            errors.append(
                FieldError(
                    f"spec.trainer.args[{index}]",
                    f"sets {key!r}, which the runtime manages (where the initializers put the model and "
                    "where output goes): remove it",
                )
            )
    return errors
