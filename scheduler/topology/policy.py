"""The placement-policy extension point: another way to choose a pod set's nodes, for comparison.

trainyard's placer chooses nodes itself (the lowest tier, the fewest domains, the least
fragmentation). To compare it with the policies the field uses (first-fit, best-fit, Kueue's
TAS algorithms, FGD...), a ``PlacementPolicy`` can take that one choice over: the placer still
decides what the engine decides around it (quota, flavors, which pod sets form a gang, leaders
with their workers, the check that nothing is overcommitted) and asks the policy only which nodes
a pod set goes to. ``simulations.placement_policies`` holds the policies; the engine runs
without one.

``PlacementView`` is what a policy sees: the nodes in topology order with their free and
allocatable amounts, how many pods of the pod set's shape each holds, the domains per level, the
pod set's levels, and the recent shapes fragmentation is measured against. The simulator's
GPU-sharing replay builds the same view over its own ledger, with each GPU's free share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from scheduler.topology.capacity import BoolArray, CapacityState
from scheduler.topology.distribution import PodSetLevels
from scheduler.topology.fragmentation import WHOLE, ShapeMix, accelerator_row
from scheduler.topology.graph import IntArray, TopologyIndex
from scheduler.topology.model import PlacementFailure, PodSetRequest
from scheduler.topology.shape_history import ShapeHistory
from scheduler.topology.shapes import ShapeCounts


class PlacementView:
    """One pod set to place, and the cluster as a placement policy sees it."""

    def __init__(
        self,
        index: TopologyIndex,
        slots: IntArray,
        free: IntArray,
        allocatable: IntArray,
        resources: tuple[str, ...],
        per_pod: IntArray,
        pods: int,
        *,
        level: int | None = None,
        required: bool = False,
        gpu_row: int | None = None,
        mix: ShapeMix | None = None,
        mix_eligible: Callable[[IntArray], BoolArray] | None = None,
        devices: IntArray | None = None,
        share: int = WHOLE,
        gpus: int | None = None,
    ) -> None:
        self.index = index
        self.slots = slots  # pods of the shape each node holds now (0 where it may not run)
        self.free = free  # resources × nodes
        self.allocatable = allocatable  # resources × nodes
        self.resources = resources
        self.per_pod = per_pod  # one pod's amounts over ``resources`` (its GPUs in whole GPUs)
        self.pods = pods
        # the level the pod set asked for, required or preferred (internal index; 0 is the whole
        # flavor); the lowest (the nodes) when it asked for none
        self.level = index.depth - 1 if level is None else level
        self.required = required  # whether the pod set must fit in one domain of ``level``
        self.gpu_row = gpu_row  # the GPU resource's row, None when the nodes have none
        self.mix = mix  # the recent shapes fragmentation is measured against
        self._mix_eligible = mix_eligible
        self.devices = devices  # nodes × GPUs: each GPU's free thousandths (-1: no such GPU); None: whole GPUs
        self.share = share  # the thousandths of one GPU a pod takes on each of its GPUs
        # the GPUs each pod takes (a share takes one, though ``per_pod`` asks for no whole GPU)
        self.gpus_per_pod = (0 if gpu_row is None else int(per_pod[gpu_row])) if gpus is None else gpus

    def mix_eligible(self, nodes: IntArray) -> BoolArray:
        """The mix's shapes × ``nodes``: where each may run."""
        if self._mix_eligible is None or self.mix is None:
            return np.ones((0 if self.mix is None else len(self.mix), len(nodes)), dtype=np.bool_)
        return self._mix_eligible(nodes)


class Chosen:
    """A policy's answer: a node per pod (positions in topology order) and, where GPUs are shared,
    the GPU each pod's share goes to (None: the ledger picks the fullest GPU that holds it)."""

    def __init__(self, nodes: IntArray, devices: list[int] | None = None) -> None:
        self.nodes = nodes
        self.devices = devices


class PlacementPolicy(Protocol):
    """Chooses a pod set's nodes; None when it finds none (the pod set is not placed)."""

    name: str

    def choose(self, view: PlacementView) -> Chosen | None: ...


def placer_view(
    index: TopologyIndex,
    state: CapacityState,
    counts: ShapeCounts,
    request: PodSetRequest,
    levels: PodSetLevels,
    history: ShapeHistory,
) -> PlacementView:
    """The view of a placer's state for one pod set (whole GPUs), with its recent shapes."""
    gpu_row = accelerator_row(state.resources, request.requests)
    asked = request.required_level or request.preferred_level
    mix = None if gpu_row is None else history.mix(gpu_row)

    def mix_eligible(nodes: IntArray) -> BoolArray:
        assert mix is not None  # asked only with a mix
        return history.eligible(state, nodes)[mix.asks_gpu]

    return PlacementView(
        index,
        counts.slots,
        state.free,
        state.alloc,
        state.resources,
        state.amounts_vector(request.requests),
        request.count,
        level=None if asked is None else index.level_index(asked),
        required=levels.required,
        gpu_row=gpu_row,
        mix=mix,
        mix_eligible=mix_eligible,
    )


def choose_by_policy(
    policy: PlacementPolicy, view: PlacementView, request: PodSetRequest, flavor_name: str
) -> IntArray | PlacementFailure:
    """The nodes ``policy`` chooses for ``request`` (one per pod, in topology order), or why not."""
    chosen = policy.choose(view)
    if chosen is None:
        return PlacementFailure(
            f"pod set {request.name!r}: placement policy {policy.name} found no nodes for {request.count} pods × "
            f"{request.describe_pod()} in flavor {flavor_name!r}",
            request.name,
        )
    return np.sort(chosen.nodes)
