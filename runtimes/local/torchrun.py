"""Turn the rendered node container into local processes, as torchrun would.

On a cluster each node pod runs its container command with the PET_* env the torch plugin
injects, and ``torchrun`` reads PET_* (its options default to them) and spawns one process per
local rank. Locally the launcher plays both parts without importing torch:

- ``PET_MASTER_ADDR`` becomes 127.0.0.1 and ``PET_MASTER_PORT`` a free loopback port;
- ``PET_NODE_RANK`` comes from the pod's completion index (the fieldRef of the render);
- a ``torchrun ...`` / ``python -m torch.distributed.run ...`` command is parsed and its script
  (or ``-m`` module) is started once per local rank with RANK, LOCAL_RANK, WORLD_SIZE,
  LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT and TORCHELASTIC_* set as torchrun sets
  them; explicit torchrun options win over PET_* (torchrun's own precedence);
- any other command under a torch runtime is started once per local rank the same way (as
  ``torchrun --no-python`` would); under a plain runtime, once per node;
- ``python``/``python3`` at the head of a command is this interpreter (the image's is absent);
- a node that asks for GPUs sees its own slice of the host's through ``CUDA_VISIBLE_DEVICES``
  (:mod:`runtimes.local.devices`), and ``gpu`` / ``auto`` numProcPerNode count those GPUs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtimes.local.devices import CUDA_VISIBLE_DEVICES, GPU_FIELD
from runtimes.local.errors import LocalRunError
from runtimes.local.plan import LocalPlan, PodContext, resolve_env

LOOPBACK = "127.0.0.1"

# torchrun options that take a value (underscore spellings are normalised to dashes).
_VALUED_OPTIONS = frozenset(
    {
        "--nnodes",
        "--nproc-per-node",
        "--node-rank",
        "--master-addr",
        "--master-port",
        "--rdzv-backend",
        "--rdzv-endpoint",
        "--rdzv-id",
        "--rdzv-conf",
        "--rdzv-timeout",
        "--max-restarts",
        "--monitor-interval",
        "--start-method",
        "--role",
        "--log-dir",
        "--redirects",
        "-r",
        "--tee",
        "-t",
        "--local-addr",
        "--local-ranks-filter",
        "--logs-specs",
        "--log-line-prefix-template",
        "--event-log-handler",
        "--signals-to-handle",
        "--numa-binding",
        "--duplicate-stdout-filters",
        "--duplicate-stderr-filters",
    }
)
_FLAG_OPTIONS = frozenset({"--standalone", "-m", "--module", "--no-python", "--run-path", "--virtual-local-rank"})


@dataclass(frozen=True)
class ProcessSpec:
    """One local process: its log label ("node-1/rank-3"), log step ("node-1"), command, env."""

    label: str
    step: str
    command: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None = None


@dataclass(frozen=True)
class TorchrunCommand:
    options: Mapping[str, str]
    module: bool
    no_python: bool
    program: tuple[str, ...]


def is_python(word: str) -> bool:
    name = Path(word).name
    return name == "python" or name.startswith("python3")


def local_command(command: tuple[str, ...]) -> tuple[str, ...]:
    """The command with the image's python replaced by this interpreter."""
    return (sys.executable, *command[1:]) if command and is_python(command[0]) else command


def parse_torchrun(command: tuple[str, ...]) -> TorchrunCommand | None:
    """The torchrun invocation in ``command``, or None when the command is not torchrun."""
    if command and Path(command[0]).name == "torchrun":
        rest = list(command[1:])
    elif len(command) >= 3 and is_python(command[0]) and command[1:3] == ("-m", "torch.distributed.run"):
        rest = list(command[3:])
    else:
        return None
    options: dict[str, str] = {}
    flags: set[str] = set()
    while rest and rest[0].startswith("-"):
        word = rest.pop(0)
        key, has_value, value = word.partition("=")
        if key.startswith("--"):
            key = "--" + key[2:].replace("_", "-")
        if key in _FLAG_OPTIONS:
            flags.add(key)
        elif key in _VALUED_OPTIONS:
            if not has_value:
                if not rest:
                    raise LocalRunError(f"torchrun option {key} needs a value in the node command")
                value = rest.pop(0)
            options[key] = value
        else:
            raise LocalRunError(f"torchrun option {key!r} in the node command is not supported by local runs")
    if not rest:
        raise LocalRunError("the torchrun command in the node container names no training script")
    return TorchrunCommand(
        options=options,
        module=bool(flags & {"-m", "--module"}),
        no_python="--no-python" in flags,
        program=tuple(rest),
    )


def resolve_nproc(value: str, gpus: int = 0) -> int:
    """PET_NPROC_PER_NODE / --nproc-per-node as torchrun resolves it where the node sees ``gpus`` GPUs.

    ``gpu`` is one process per GPU; ``auto`` too when there are GPUs, else one per CPU (as is ``cpu``).
    """
    if value == "gpu" and gpus == 0:
        raise LocalRunError(
            "numProcPerNode 'gpu' starts one process per GPU of a node, and the nodes of this local run get "
            f"none: ask for GPUs ({GPU_FIELD}) and run with --device auto or cuda, or set numProcPerNode "
            "to an integer"
        )
    if value == "gpu" or (value == "auto" and gpus):
        return gpus
    if value in ("auto", "cpu"):
        return os.cpu_count() or 1
    try:
        count = int(value)
    except ValueError:
        raise LocalRunError(f"numProcPerNode {value!r} is not an integer nor auto/cpu/gpu") from None
    if count < 1:
        raise LocalRunError(f"numProcPerNode must be at least 1, got {count}")
    return count


def _int_option(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise LocalRunError(f"{name} {value!r} must be an integer for local runs (no elastic ranges)") from None


def _substitute_master(
    command: tuple[str, ...], master: str | None, cluster_port: str | None, port: int
) -> tuple[str, ...]:
    """Point any mention of the cluster master address (e.g. --rdzv_endpoint) at loopback."""
    if not master:
        return command
    endpoint = f"{master}:{cluster_port}" if cluster_port else None
    return tuple(
        (part.replace(endpoint, f"{LOOPBACK}:{port}") if endpoint else part).replace(master, LOOPBACK)
        for part in command
    )


def node_processes(
    plan: LocalPlan,
    master_port: int,
    base_env: Mapping[str, str],
    cwd: str | None = None,
    visible_devices: Sequence[str | None] = (),
) -> list[ProcessSpec]:
    """Every local process of the trainer job: numNodes x numProcPerNode ranks (torch) or numNodes.

    ``visible_devices[i]``, where given and not None, is node i's ``CUDA_VISIBLE_DEVICES``
    (:func:`runtimes.local.devices.node_visible_devices`).
    """
    trainer = plan.trainer
    specs: list[ProcessSpec] = []
    for node in range(trainer.parallelism):
        pod = PodContext(plan.name, plan.namespace, trainer.replicated_job, node)
        env = dict(base_env)
        container_env = resolve_env(plan, trainer, pod)
        master = container_env.get("PET_MASTER_ADDR")
        cluster_port = container_env.get("PET_MASTER_PORT")
        if "PET_MASTER_ADDR" in container_env:
            container_env["PET_MASTER_ADDR"] = LOOPBACK
        if "PET_MASTER_PORT" in container_env:
            container_env["PET_MASTER_PORT"] = str(master_port)
        env.update(container_env)
        visible = visible_devices[node] if node < len(visible_devices) else None
        if visible is not None:
            # After the container's env: the device plugin's choice is what the pod sees.
            env[CUDA_VISIBLE_DEVICES] = visible
        gpus = len(visible.split(",")) if visible else 0
        command = _substitute_master(trainer.command, master, cluster_port, master_port)
        step = f"{trainer.replicated_job}-{node}"
        if not plan.is_torch:
            specs.append(ProcessSpec(step, step, local_command(command), env, cwd))
            continue
        specs.extend(_torch_ranks(command, env, node, step, master_port, cwd, gpus))
    return specs


def _torch_ranks(
    command: tuple[str, ...],
    env: dict[str, str],
    node: int,
    step: str,
    master_port: int,
    cwd: str | None,
    gpus: int,
) -> list[ProcessSpec]:
    torchrun = parse_torchrun(command)
    options = torchrun.options if torchrun else {}
    nproc = resolve_nproc(options.get("--nproc-per-node") or env.get("PET_NPROC_PER_NODE", "1"), gpus)
    nnodes = _int_option("nnodes", options.get("--nnodes") or env.get("PET_NNODES", "1"))
    node_rank = _int_option("node rank", options.get("--node-rank") or env.get("PET_NODE_RANK", str(node)))
    if torchrun is None:
        program = local_command(command)
    elif torchrun.no_python:
        program = torchrun.program
    elif torchrun.module:
        program = (sys.executable, "-m", *torchrun.program)
    else:
        program = (sys.executable, *torchrun.program)
    world_size = nnodes * nproc
    specs = []
    for local_rank in range(nproc):
        rank = node_rank * nproc + local_rank
        rank_env = dict(env)
        rank_env.update(
            {
                "LOCAL_RANK": str(local_rank),
                "RANK": str(rank),
                "GROUP_RANK": str(node_rank),
                "ROLE_RANK": str(rank),
                "ROLE_NAME": "default",
                "LOCAL_WORLD_SIZE": str(nproc),
                "WORLD_SIZE": str(world_size),
                "GROUP_WORLD_SIZE": str(nnodes),
                "ROLE_WORLD_SIZE": str(world_size),
                "MASTER_ADDR": LOOPBACK,
                "MASTER_PORT": str(master_port),
                "TORCHELASTIC_RESTART_COUNT": env.get("TRAINYARD_RESTART_ATTEMPT", "0"),
                "TORCHELASTIC_MAX_RESTARTS": "0",
                "TORCHELASTIC_RUN_ID": "none",
            }
        )
        if nproc > 1:
            rank_env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's default for several ranks per node
        specs.append(ProcessSpec(f"{step}/rank-{rank}", step, program, rank_env, cwd))
    return specs
