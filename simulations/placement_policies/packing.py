"""Packing heuristics: best-fit by free GPUs, and the dot product of Tetris.

Best-fit puts each pod on the node with the fewest free GPUs that holds it (free thousandths of
a GPU where GPUs are shared), so partly used nodes fill up before empty ones are opened; ties go
to topology order. Dot-product follows Tetris (Grandl et al., SIGCOMM '14) as the FGD paper's
simulator runs it: a node's free CPU, memory and GPU and the pod's requests, each divided by the
largest node's amount, are multiplied and summed, and the pod goes where that product is
smallest (the node whose free resources the pod leaves least unbalanced).
"""

from __future__ import annotations

import numpy as np

from scheduler.topology.fragmentation import WHOLE
from scheduler.topology.graph import IntArray
from scheduler.topology.policy import Chosen, PlacementView
from simulations.placement_policies.greedy import PodByPod, pod_by_pod

DIMENSIONS = ("cpu", "memory")  # with the GPU row: Tetris's resource vector


def free_gpu_share(state: PodByPod, nodes: IntArray) -> IntArray:
    """Free GPU capacity of ``nodes`` in thousandths (whole GPUs × 1000 where GPUs are whole)."""
    if state.devices is not None:
        held: IntArray = np.add.reduce(np.maximum(state.devices[nodes], 0), axis=1)
        return held
    row = state.view.gpu_row
    if row is None:
        return np.zeros(len(nodes), dtype=np.int64)
    whole: IntArray = np.maximum(state.free[row, nodes], 0) * WHOLE
    return whole


class BestFitGpus:
    name = "best-fit"

    def choose(self, view: PlacementView) -> Chosen | None:
        def pick(state: PodByPod, candidates: IntArray) -> tuple[int, int | None]:
            return int(candidates[int(np.argmin(free_gpu_share(state, candidates)))]), None

        return pod_by_pod(view, pick)


class DotProduct:
    name = "dot-product"

    def choose(self, view: PlacementView) -> Chosen | None:
        rows = [view.resources.index(r) for r in DIMENSIONS if r in view.resources]
        scale = np.maximum(np.maximum.reduce(view.allocatable, axis=1), 1).astype(np.float64)  # the largest node's
        gpu_scale = float(scale[view.gpu_row]) * WHOLE if view.gpu_row is not None else 1.0
        demand = view.per_pod[rows] / scale[rows]
        gpu_demand = view.gpus_per_pod * (view.share if view.devices is not None else WHOLE) / gpu_scale

        def pick(state: PodByPod, candidates: IntArray) -> tuple[int, int | None]:
            free = state.free[rows][:, candidates] / scale[rows][:, None]
            product = demand @ free + gpu_demand * free_gpu_share(state, candidates) / gpu_scale
            return int(candidates[int(np.argmin(product))]), None

        return pod_by_pod(view, pick)
