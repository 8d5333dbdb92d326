"""The saturation replay's cluster, two ways: whole GPUs through the engine's placer, or shared GPUs.

``WholeGpuCluster`` is the engine's own ``TopologyPlacer`` over the trace's nodes (one pool, the
hostname as the only level), with a comparison policy plugged in where one is asked for: the
decisions are the placer's, a GPU share is rounded up to a whole GPU as Kubernetes extended
resources have it. ``SharedGpuCluster`` places pods as GPU sharing does (as the FGD paper does):
a pod with a share (``gpu_milli`` < 1000) takes that share of one GPU, several pods to a GPU up
to a whole one, and a pod of whole GPUs takes GPUs with nothing on them. Its CPU, memory and pod
counts are the placer's capacity state; each GPU's free share is kept beside it, and the GPU
row of the state counts the node's untouched GPUs, which is what a whole-GPU pod can use.

A pod's ``gpu_spec`` (allowed GPU models) becomes a node selector on the model, tried model by
model in the order the trace lists them, in both.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from scheduler.api.kueue import ResourceFlavor, Topology
from scheduler.topology import GangPlacement, GangRequest, PodSetRequest, TopologyPlacer
from scheduler.topology.capacity import BoolArray
from scheduler.topology.fragmentation import WHOLE
from scheduler.topology.graph import IntArray
from scheduler.topology.least_fragmenting import choose_least_fragmenting
from scheduler.topology.policy import Chosen, PlacementPolicy, PlacementView
from simulations.cluster_spec import GPU_RESOURCE, HOSTNAME_LABEL, TOPOLOGY_NAME
from simulations.saturation.shapes import PodShapes, TracePod
from simulations.traces.openb import OpenbTrace


def trace_placer(trace: OpenbTrace, policy: PlacementPolicy | None) -> TopologyPlacer:
    """The engine's placer over the trace's nodes: one pool, the hostname as the only level."""
    topology = Topology.model_validate(
        {"metadata": {"name": TOPOLOGY_NAME}, "spec": {"levels": [{"nodeLabel": HOSTNAME_LABEL}]}}
    )
    pool = ResourceFlavor.model_validate({"metadata": {"name": "openb"}, "spec": {"topologyName": TOPOLOGY_NAME}})
    return TopologyPlacer.build(topology, pool, trace.nodes, policy)


class TraceCluster:
    """The trace's nodes in the engine's placer; a pod is tried model by model."""

    sharing = False

    def __init__(self, trace: OpenbTrace, policy: PlacementPolicy | None) -> None:
        self.placer = trace_placer(trace, policy)
        self.state = self.placer.state
        self.gpu_row = self.state.resource_index[GPU_RESOURCE]

    def place(self, pod: TracePod) -> bool:
        return any(self.place_on(pod, selector) for selector in pod.selectors())

    def place_on(self, pod: TracePod, selector: dict[str, str]) -> bool:
        raise NotImplementedError


class WholeGpuCluster(TraceCluster):
    """Whole GPUs: every pod through the engine's placer (and the compared policy, if any)."""

    def place_on(self, pod: TracePod, selector: dict[str, str]) -> bool:
        request = PodSetRequest("pod", 1, pod.requests(), node_selector=selector, required_level=HOSTNAME_LABEL)
        placement = self.placer.place(GangRequest.of(request))
        if not isinstance(placement, GangPlacement):
            return False
        self.placer.reserve(placement)
        return True

    def gpu_room(self, gpus: int, share: int) -> BoolArray:
        """Nodes with ``gpus`` GPUs free (CPU and memory aside; shares are whole GPUs here)."""
        return np.asarray(self.state.free[self.gpu_row] >= gpus, dtype=np.bool_)

    def idle_milli(self) -> IntArray:
        """Per node, its free GPU capacity in thousandths."""
        idle: IntArray = np.maximum(self.state.free[self.gpu_row], 0) * WHOLE
        return idle

    def devices(self) -> IntArray | None:
        return None


Chooser = Callable[[PlacementView], Chosen | None]


class SharedGpuCluster(TraceCluster):
    """Shared GPUs: each GPU's free share kept beside the placer's capacity state."""

    sharing = True

    def __init__(self, trace: OpenbTrace, policy: PlacementPolicy | None) -> None:
        super().__init__(trace, None)  # the placer only keeps CPU, memory and pod counts here
        self.choose: Chooser = choose_least_fragmenting if policy is None else policy.choose
        self.arrived = PodShapes(self.state, self.gpu_row)  # the shapes arrived so far: the replay records each
        gpus = self.state.alloc[self.gpu_row]
        width = int(np.maximum.reduce(gpus)) if len(gpus) else 0
        self.device_free = np.where(np.arange(width)[None, :] < gpus[:, None], WHOLE, -1).astype(np.int64)

    def place_on(self, pod: TracePod, selector: dict[str, str]) -> bool:
        state = self.state
        shape = state.shape(pod.requests(whole_gpus=False), node_selector=selector)
        slots = self._slots(state.counts(shape).slots, pod)
        if not int(np.maximum.reduce(slots)):
            return False
        view = PlacementView(
            self.placer.index,
            slots,
            state.free,
            state.alloc,
            state.resources,
            state.amounts_vector(pod.requests(whole_gpus=False)),
            1,
            gpu_row=self.gpu_row,
            mix=self.arrived.mix(),
            mix_eligible=self.arrived.eligible,
            devices=self.device_free,
            share=pod.share,
            gpus=pod.gpus,
        )
        chosen = self.choose(view)
        if chosen is None:
            return False
        self._take(int(chosen.nodes[0]), pod, None if chosen.devices is None else chosen.devices[0])
        return True

    def _slots(self, others: IntArray, pod: TracePod) -> IntArray:
        """Pods of ``pod``'s shape each node holds: CPU, memory and pod slots (``others``) and GPUs."""
        if not pod.gpus:
            return others
        if pod.share >= WHOLE:
            gpus = np.add.reduce(self.device_free == WHOLE, axis=1) // pod.gpus
        else:
            gpus = np.add.reduce(np.maximum(self.device_free, 0) // pod.share, axis=1)
        slots: IntArray = np.minimum(others, gpus)
        return slots

    def _take(self, node: int, pod: TracePod, device: int | None) -> None:
        row = self.device_free[node]
        whole_before = int(np.add.reduce(row == WHOLE))
        if pod.gpus and pod.share < WHOLE:
            if device is None:
                device = int(np.argmin(np.where(row >= pod.share, row, WHOLE + 1)))  # the fullest that holds it
            if row[device] < pod.share:
                raise ValueError(f"GPU {device} of node {node} has {row[device]} thousandths free, not {pod.share}")
            row[device] -= pod.share
        elif pod.gpus:
            untouched = np.flatnonzero(row == WHOLE)
            if len(untouched) < pod.gpus:
                raise ValueError(f"node {node} has {len(untouched)} untouched GPUs, not {pod.gpus}")
            row[untouched[: pod.gpus]] = 0
        delta = self.state.amounts_vector(pod.requests(whole_gpus=False))
        delta[self.gpu_row] = whole_before - int(np.add.reduce(row == WHOLE))  # untouched GPUs it took
        if self.state.apply(np.array([node], dtype=np.int64), delta[:, None], report_overcommit=True):
            raise ValueError(f"pod overcommits node {node}")

    def gpu_room(self, gpus: int, share: int) -> BoolArray:
        """Nodes with ``gpus`` untouched GPUs, or for a share one GPU with that much left."""
        if share >= WHOLE:
            return np.asarray(np.add.reduce(self.device_free == WHOLE, axis=1) >= gpus, dtype=np.bool_)
        return np.asarray(np.maximum.reduce(self.device_free, axis=1) >= share, dtype=np.bool_)

    def idle_milli(self) -> IntArray:
        idle: IntArray = np.add.reduce(np.maximum(self.device_free, 0), axis=1)
        return idle

    def devices(self) -> IntArray | None:
        return self.device_free
