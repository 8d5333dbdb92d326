"""Why the saturation replay refused a pod, and which free GPUs no refused pod could use.

Kinds of refusal: ``never-fits`` (no allowed node holds the pod even empty), ``gpus`` (no allowed
node that could hold it has its GPUs free: whole GPUs, or a GPU with its share left where GPUs
are shared), ``cpu-memory`` (nodes with its GPUs free lack the CPU or memory besides).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from scheduler.topology.capacity import BoolArray, CapacityState
from scheduler.topology.fragmentation import WHOLE
from scheduler.topology.graph import IntArray
from simulations.cluster_spec import GPU_PRODUCT_LABEL, GPU_RESOURCE
from simulations.saturation.shapes import TracePod

RefusedShape = tuple[int, int, int, int, tuple[str, ...]]  # cpu milli, memory MiB, GPUs, share, models


class ReplayCluster(Protocol):
    state: CapacityState
    gpu_row: int

    def gpu_room(self, gpus: int, share: int) -> BoolArray: ...

    def idle_milli(self) -> IntArray: ...


def _allowed(state: CapacityState, models: tuple[str, ...]) -> BoolArray:
    node_models = np.array([labels.get(GPU_PRODUCT_LABEL, "") for labels in state.labels])
    return state.usable & (np.isin(node_models, list(models)) if models else True)


def _describe(pod: TracePod) -> str:
    job = pod.job
    gpus = f"{pod.gpus} GPU(s)" if pod.share >= WHOLE else f"{pod.share / WHOLE:g} of a GPU"
    return f"{gpus}, {job.cpu_milli / 1000:g} cores, {job.memory_mib / 1024:g} GiB"


def refusal(cluster: ReplayCluster, pod: TracePod) -> tuple[str, str]:
    """Why no node took ``pod`` when it arrived: (kind, words)."""
    state = cluster.state
    rows = state.resource_index
    job = pod.job
    allowed = _allowed(state, job.gpu_models)
    where = f"{'/'.join(job.gpu_models)} node" if job.gpu_models else "node"
    holds = allowed & (state.alloc[rows["cpu"]] >= job.cpu_milli)
    holds &= state.alloc[rows["memory"]] >= job.memory_mib * 1024 * 1024
    holds &= state.alloc[rows[GPU_RESOURCE]] >= pod.gpus
    if not holds.any():
        return "never-fits", f"no {where} holds {_describe(pod)} even empty"
    gpus_free = holds & cluster.gpu_room(pod.gpus, pod.share)
    if not gpus_free.any():
        most = int(state.free[rows[GPU_RESOURCE]][holds].max())
        return "gpus", (
            f"no {where} has {pod.gpus} GPU(s) free (the most on one that could hold it: {most})"
            if pod.share >= WHOLE
            else f"no {where} has {pod.share} thousandths of one GPU free"
        )
    return "cpu-memory", (
        f"{int(gpus_free.sum())} {where}(s) have {_describe(pod).split(',')[0]} free, but none of them also has "
        f"{job.cpu_milli / 1000:g} cores and {job.memory_mib / 1024:g} GiB free"
    )


def stranded(cluster: ReplayCluster, refused: set[RefusedShape]) -> dict[str, Any]:
    """Free GPU capacity on nodes where none of the refused GPU pods fits, against all free GPU
    capacity, in GPUs."""
    state = cluster.state
    rows = state.resource_index
    free = np.maximum(state.free, 0)
    idle = cluster.idle_milli()
    fits = np.zeros(len(idle), dtype=bool)
    for cpu, memory, gpus, share, models in refused:
        job_fits = (free[rows["cpu"]] >= cpu) & (free[rows["memory"]] >= memory * 1024 * 1024)
        fits |= job_fits & cluster.gpu_room(gpus, share) & _allowed(state, models)
    usable = state.usable
    free_total = int(idle[usable].sum())
    stranded_milli = int(idle[usable & ~fits].sum())
    return {
        "free_gpus": round(free_total / WHOLE, 3),
        "stranded_gpus": round(stranded_milli / WHOLE, 3),
        "fraction_of_free": round(stranded_milli / free_total, 4) if free_total else 0.0,
        "refused_gpu_pod_shapes": len(refused),
    }
