"""Which of this machine's GPUs each local "node" sees, as the NVIDIA device plugin decides on a cluster.

On a cluster a pod that asks for ``nvidia.com/gpu: N`` gets N GPUs of its own, and torchrun in
it sees only those. Locally every node of the TrainJob shares one machine, so node ``i`` gets the
disjoint slice ``i*N .. i*N+N-1`` of the host's visible GPUs through ``CUDA_VISIBLE_DEVICES``.

The host's GPUs are counted without torch (the launcher stays torch-free): an existing
``CUDA_VISIBLE_DEVICES`` is honoured (its entries are the GPUs handed out), else ``nvidia-smi -L``
is asked when it is on PATH, else the driver's ``/proc/driver/nvidia/gpus`` is read, else the
host has none.

``device`` is what the person running the job chose: ``auto`` (GPUs when the job asks for them),
``cpu`` (every process gets ``CUDA_VISIBLE_DEVICES=""``, GPUs asked for or not) or ``cuda``
(GPUs are required: a job or a host without them is refused).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from runtimes.local.errors import LocalRunError
from runtimes.local.plan import GPU_RESOURCE, LocalPlan
from runtimes.messages import subject_of

Device = Literal["auto", "cpu", "cuda"]
DEVICES: tuple[Device, ...] = ("auto", "cpu", "cuda")
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
GPU_FIELD = f"spec.trainer.resourcesPerNode {GPU_RESOURCE}"
CPU_FIX = "--device cpu (in the SDK: LocalBackendConfig(device='cpu'))"
_NVIDIA_SMI_TIMEOUT = 20.0
DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")


def device_choice(value: str) -> Device:
    """``value`` as a :data:`Device`; anything else is refused with the accepted words."""
    if value not in DEVICES:
        raise LocalRunError(f"device {value!r} is not accepted: use one of {', '.join(DEVICES)}")
    return value


@dataclass(frozen=True)
class HostGpus:
    """The GPUs local processes may be given (CUDA_VISIBLE_DEVICES entries) and where they came from."""

    ids: tuple[str, ...]
    source: str


def host_gpus(environ: Mapping[str, str], driver_gpus: Path = DRIVER_GPUS) -> HostGpus:
    """This machine's GPUs as the launcher's processes would see them, found without torch."""
    if CUDA_VISIBLE_DEVICES in environ:
        value = environ[CUDA_VISIBLE_DEVICES]
        ids: list[str] = []
        for entry in (part.strip() for part in value.split(",")):
            # CUDA stops at the first invalid entry; "-1" is the usual way to say "none".
            if not entry or entry.startswith("-"):
                break
            ids.append(entry)
        return HostGpus(tuple(ids), f"{CUDA_VISIBLE_DEVICES}={value!r}")
    smi = shutil.which("nvidia-smi", path=environ.get("PATH"))
    if smi is None:
        return _driver_gpus(driver_gpus)
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=_NVIDIA_SMI_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return HostGpus((), f"nvidia-smi -L failed ({error})")
    if listed.returncode != 0:
        return HostGpus((), f"nvidia-smi -L exited with {listed.returncode}")
    # One "GPU i: ..." line per GPU; MIG instances are indented lines under their GPU.
    count = sum(1 for line in listed.stdout.splitlines() if line.startswith("GPU "))
    return HostGpus(tuple(str(index) for index in range(count)), "nvidia-smi -L")


def _driver_gpus(folder: Path) -> HostGpus:
    """Without nvidia-smi (a slim container): the GPUs the NVIDIA driver lists, one folder each."""
    try:
        count = sum(1 for _ in folder.iterdir())
    except OSError:
        return HostGpus((), f"no {CUDA_VISIBLE_DEVICES}, no nvidia-smi on PATH, no {folder}")
    return HostGpus(tuple(str(index) for index in range(count)), str(folder))


def node_visible_devices(plan: LocalPlan, device: Device, environ: Mapping[str, str]) -> tuple[str | None, ...]:
    """``CUDA_VISIBLE_DEVICES`` for each trainer node's processes (None: the inherited one is left
    alone, on a host without GPUs), the host's GPUs read from ``environ``."""
    trainjob = subject_of("TrainJob", plan.name, plan.namespace)
    nodes, gpus_per_node = plan.trainer.parallelism, plan.trainer.gpus
    if device == "cpu":
        return ("",) * nodes
    if gpus_per_node == 0:
        if device == "cuda":
            raise LocalRunError(
                f"{trainjob}: --device cuda, but {GPU_FIELD} is not set, so its nodes get no GPU: "
                f"ask for GPUs there (e.g. limits: {{{GPU_RESOURCE}: 1}}), or use --device auto"
            )
        # On a cluster a pod that asks for no GPU sees none; here too, so a CPU job never lands on
        # a GPU the host happens to have (nor do its ranks all crowd onto GPU 0 under nccl).
        return ("",) * nodes if host_gpus(environ).ids else (None,) * nodes
    wanted = nodes * gpus_per_node
    host = host_gpus(environ)
    if len(host.ids) < wanted:
        raise LocalRunError(
            f"{trainjob}: {GPU_FIELD} is {gpus_per_node} on each of {nodes} node(s), {wanted} GPU(s) "
            f"in all, but this machine has {len(host.ids)} ({host.source}): lower numNodes or "
            f"{GPU_RESOURCE} to fit, or run on the CPU anyway with {CPU_FIX}"
        )
    return tuple(",".join(host.ids[node * gpus_per_node : (node + 1) * gpus_per_node]) for node in range(nodes))


def describe_devices(visible: Sequence[str | None], step: str) -> str | None:
    """One launcher line saying what each node sees; None when nothing was set."""
    if all(value is None for value in visible):
        return None
    if all(value == "" for value in visible):
        return f"{CUDA_VISIBLE_DEVICES}='' for every process: training on the CPU"
    return "GPUs: " + "; ".join(
        f"{step}-{node} gets {CUDA_VISIBLE_DEVICES}={value}" for node, value in enumerate(visible)
    )
