"""The pod shapes of the saturation replay: what FGD and the fragmentation rate measure against.

A shape is what a pod asks for: CPU, memory, its GPUs with the share of each (1000 thousandths
for whole GPUs) and the GPU models it allows. ``PodShapes`` counts the pods of each shape it is
told of and gives them as a ``ShapeMix`` (weights: pods per shape) with where each may run: on
Ready nodes of an allowed model. The replay tells one of the shapes arrived so far (FGD's view
where GPUs are shared: a scheduler does not know its future) and one of the whole trace (the
fragmentation rate, as the paper measures it against the trace's distribution).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from scheduler.topology.capacity import BoolArray, CapacityState
from scheduler.topology.fragmentation import WHOLE, FloatArray, ShapeMix
from scheduler.topology.graph import IntArray
from simulations.cluster_spec import GPU_PRODUCT_LABEL, GPU_RESOURCE
from simulations.workloads import JobSpec


@dataclass(frozen=True)
class TracePod:
    """One pod of the trace as the replay places it."""

    job: JobSpec
    share: int  # thousandths of one GPU on each of its GPUs: 1000 for whole GPUs

    @property
    def gpus(self) -> int:
        return self.job.gpus_per_node

    @property
    def milli(self) -> int:
        """Its GPU demand in thousandths of a GPU."""
        return self.gpus * self.share

    def requests(self, whole_gpus: bool = True) -> dict[str, int]:
        """Its requests; with ``whole_gpus`` False a share asks for no whole GPU."""
        gpus = self.gpus if whole_gpus or self.share >= WHOLE else 0
        return {"cpu": self.job.cpu_milli, "memory": self.job.memory_mib * 1024 * 1024, GPU_RESOURCE: gpus}

    def selectors(self) -> list[dict[str, str]]:
        return [{GPU_PRODUCT_LABEL: model} for model in self.job.gpu_models] or [{}]


ShapeKey = tuple[int, int, int, int, tuple[str, ...]]  # cpu milli, memory MiB, GPUs, share, models


class PodShapes:
    """Pods counted per shape, over one capacity state's resources and nodes."""

    def __init__(self, state: CapacityState, gpu_row: int, pods: Iterable[TracePod] = ()) -> None:
        self.state = state
        self.gpu_row = gpu_row
        self.counts: dict[ShapeKey, int] = {}
        self.models = np.array([labels.get(GPU_PRODUCT_LABEL, "") for labels in state.labels])
        self._mix: ShapeMix | None = None
        self._eligible: BoolArray | None = None  # the mix's shapes × all nodes
        for pod in pods:
            self.record(pod)

    def record(self, pod: TracePod) -> None:
        job = pod.job
        key = (job.cpu_milli, job.memory_mib, pod.gpus, pod.share, job.gpu_models)
        if key not in self.counts:
            self._mix = None
            self._eligible = None
            self.counts[key] = 0
        self.counts[key] += 1
        if self._mix is not None:
            self._mix = None  # the weights moved; the shapes and where they run did not

    def mix(self) -> ShapeMix:
        if self._mix is None:
            keys = list(self.counts)
            state = self.state
            amounts = np.zeros((len(keys), len(state.resources)), dtype=np.int64)
            for k, (cpu, memory, gpus, _, _) in enumerate(keys):
                amounts[k] = state.amounts_vector({"cpu": cpu, "memory": memory * 1024 * 1024})
                amounts[k, self.gpu_row] = gpus
            share = np.array([key[3] for key in keys], dtype=np.int64).reshape(-1)
            gpus_per_pod = np.array([key[2] for key in keys], dtype=np.int64).reshape(-1)
            weights: FloatArray = np.array([self.counts[key] for key in keys], dtype=np.float64).reshape(-1)
            self._mix = ShapeMix(amounts, share, gpus_per_pod, weights)
        return self._mix

    def eligible(self, nodes: IntArray) -> BoolArray:
        """The mix's shapes × ``nodes``: Ready nodes of an allowed model."""
        if self._eligible is None:
            keys = [key for key in self.counts if key[2] > 0]  # the mix keeps the GPU shapes
            rows = [self.state.usable & (np.isin(self.models, list(key[4])) if key[4] else True) for key in keys]
            width = len(self.models)
            self._eligible = np.stack(rows) if rows else np.zeros((0, width), dtype=np.bool_)
        return self._eligible[:, nodes]
