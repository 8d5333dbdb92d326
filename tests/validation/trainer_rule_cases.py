"""One TrainJob per Trainer (and Kueue job-label) rule the TrainJob webhook enforces on CREATE.

Beyond the parity table's basics (tests/validation/parity_cases.py). Each case names
the commands that must refuse it with the webhook's words: ``render`` checks Trainer's rules,
``admit`` also Kueue's job labels (the queue and priority class must exist, as on a cluster).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from runtimes.plugins.mpi import OMPI_RESERVED_ENVS
from runtimes.plugins.torch import TORCH_RESERVED_ENVS
from runtimes.plugins.torchtune import TORCHTUNE_ENTRYPOINT
from runtimes.plugins.volcano import VOLCANO_QUEUE_ANNOTATION
from runtimes.plugins.xgboost import XGBOOST_RESERVED_ENVS
from tests.builders import trainjob

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
REPO = Path(__file__).resolve().parents[2]


def patch(
    manager: str = "example.com/platform", job: str = "node", container: str = "node", **fields: Any
) -> dict[str, Any]:
    """A runtimePatches entry changing one container of one replicated job."""
    pod = {"containers": [{"name": container, **fields}]}
    replicated = {"name": job, "template": {"spec": {"template": {"spec": pod}}}}
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [replicated]}}}}


BOTH = ("render", "admit")
ADMIT = ("admit",)

TRAINER_RULE_CASES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("runtime-ref-name-empty", trainjob(runtime=""), BOTH),
    ("name-missing", {**trainjob(), "metadata": {"namespace": "default"}}, BOTH),
    ("num-proc-per-node-beyond-int32", trainjob(trainer={"numProcPerNode": 2**40}), BOTH),
    ("num-nodes-beyond-int32-after-default", trainjob(nodes=2**31), BOTH),
    (
        "num-proc-per-node-word-for-a-plain-runtime",
        trainjob(runtime="plain-python", trainer={"numProcPerNode": "auto"}),
        BOTH,
    ),
    ("queue-label-not-a-name", trainjob(labels={QUEUE_LABEL: "Bad Queue"}), ADMIT),
    ("queue-label-unknown", trainjob(labels={QUEUE_LABEL: "nope"}), ADMIT),
    (
        "priority-class-label-unknown",
        trainjob(labels={"kueue.x-k8s.io/priority-class": "urgent"}),
        ADMIT,
    ),
    (
        "max-execution-time-label-zero",
        trainjob(labels={"kueue.x-k8s.io/max-exec-time-seconds": "0"}),
        ADMIT,
    ),
    # the runtime's plugins (torch, MPI) and the JobSet plugin
    ("torch-reserved-env", trainjob(trainer={"env": [{"name": TORCH_RESERVED_ENVS[0], "value": "2"}]}), BOTH),
    ("mpi-num-proc-per-node-word", trainjob(runtime="deepspeed-distributed", trainer={"numProcPerNode": "auto"}), BOTH),
    (
        "mpi-reserved-env",
        trainjob(runtime="deepspeed-distributed", trainer={"env": [{"name": OMPI_RESERVED_ENVS[0], "value": "x"}]}),
        BOTH,
    ),
    ("initializer-without-its-job", trainjob(initializer={"dataset": {"storageUri": "hf://org/data"}}), BOTH),
    ("patch-manager-not-a-path", trainjob(runtimePatches=[patch(manager="platform")]), BOTH),
    ("patch-manager-twice", trainjob(runtimePatches=[patch(), patch()]), BOTH),
    ("patch-job-unknown", trainjob(runtimePatches=[patch(job="worker")]), BOTH),
    ("patch-container-unknown", trainjob(runtimePatches=[patch(container="sidecar")]), BOTH),
    ("patch-container-env", trainjob(runtimePatches=[patch(env=[{"name": "A", "value": "b"}])]), BOTH),
]


def _runtime(name: str, change: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((REPO / "manifests" / "runtimes" / f"{name}.yaml").read_text())
    document["spec"]["mlPolicy"].update(change.pop("mlPolicy", {}))
    document["spec"]["template"]["spec"].update(change)
    return document


def _env_injection(*targets: dict[str, Any]) -> dict[str, Any]:
    return {"mlPolicy": {"torch": {"envInjection": {"targets": list(targets)}}}}


def _launcher_only() -> dict[str, Any]:
    document = _runtime("deepspeed_distributed", {})
    jobs = document["spec"]["template"]["spec"]["replicatedJobs"]
    launcher = next(job for job in jobs if job["name"] == "launcher")
    launcher.pop("dependsOn", None)
    document["spec"]["template"]["spec"]["replicatedJobs"] = [launcher]
    document["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = True
    return document


def _xgboost() -> dict[str, Any]:
    document = _runtime("torch_distributed", {})
    document["spec"]["mlPolicy"] = {"numNodes": 1, "xgboost": {}}
    return document


def _volcano() -> dict[str, Any]:
    document = _runtime("torch_distributed", {})
    document["spec"]["podGroupPolicy"] = {"volcano": {}}
    return document


def _torchtune(name: str) -> dict[str, Any]:
    document = _runtime("torch_distributed", {})
    document["metadata"]["name"] = name
    return document


def _tune(runtime: str, num_nodes: int = 1, args: list[str] | None = None) -> dict[str, Any]:
    return trainjob(
        runtime=runtime, nodes=num_nodes, trainer={"command": list(TORCHTUNE_ENTRYPOINT), "args": args or []}
    )


# LoRA on a quantized base: QLoRA, distributed when a node has other than one GPU or process
QLORA = ("model.lora_attn_modules=[q_proj]", "model.quantize_base=True")


def _annotated(document: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    document["metadata"]["annotations"] = annotations
    return document


# (id, TrainJob, a runtime given beside it: --runtime FILE to the CLI, in the webhook's cache)
CUSTOM_RUNTIME_CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "torch-env-injection-node",
        trainjob(),
        _runtime("torch_distributed", _env_injection({"jobName": "node", "containerNames": ["node"]})),
    ),
    (
        "torch-env-injection-job-unknown",
        trainjob(),
        _runtime("torch_distributed", _env_injection({"jobName": "nope", "containerNames": ["x"]})),
    ),
    (
        "torch-env-injection-container-unknown",
        trainjob(),
        _runtime("torch_distributed", _env_injection({"jobName": "node", "containerNames": ["sidecar"]})),
    ),
    ("xgboost-reserved-env", trainjob(trainer={"env": [{"name": XGBOOST_RESERVED_ENVS[0], "value": "x"}]}), _xgboost()),
    (
        "volcano-queue-empty",
        _annotated(trainjob(), {VOLCANO_QUEUE_ANNOTATION: ""}),
        _volcano(),
    ),
    ("torchtune-unknown-model", _tune("torchtune-gpt-9b"), _torchtune("torchtune-gpt-9b")),
    ("torchtune-model-single-node", _tune("torchtune-llama3.2-1b", 2), _torchtune("torchtune-llama3.2-1b")),
    (
        "torchtune-lora-multi-node",
        _tune("torchtune-llama3.3-70b", 2, ["model.lora_attn_modules=[q_proj]"]),
        _torchtune("torchtune-llama3.3-70b"),
    ),
    (
        "torchtune-managed-config",
        _tune("torchtune-llama3.2-1b", 1, ["output_dir=/tmp/x"]),
        _torchtune("torchtune-llama3.2-1b"),
    ),
    (
        "torchtune-qlora-qwen",
        _tune("torchtune-qwen2.5-1.5b", 1, [*QLORA]),
        _torchtune("torchtune-qwen2.5-1.5b"),
    ),
    (
        "torchtune-qlora-llama-on-several-gpus",
        _tune("torchtune-llama3.2-1b", 1, [*QLORA]),
        _torchtune("torchtune-llama3.2-1b"),
    ),
    ("mpi-launcher-as-node-without-node-job", trainjob(runtime="deepspeed-distributed", nodes=2), _launcher_only()),
]
