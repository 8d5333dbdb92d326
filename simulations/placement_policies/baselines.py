"""The naive baselines: first-fit in node order, and random.

First-fit walks the nodes in topology order and fills each before the next; random puts each pod
on a node drawn uniformly among those with room for one more (the FGD paper's "random", which
spreads pods and so strands GPUs early).
"""

from __future__ import annotations

import numpy as np

from scheduler.topology.graph import IntArray
from scheduler.topology.policy import Chosen, PlacementView
from simulations.placement_policies.greedy import PodByPod, fullest_device, pod_by_pod, scope


def first_fit(slots: IntArray, pods: int) -> IntArray | None:
    """Walk the nodes in order, filling each until every pod has a node."""
    running = np.cumsum(slots)
    if not len(running) or int(running[-1]) < pods:
        return None
    last = int(np.searchsorted(running, pods))
    taken = slots[: last + 1].copy()
    taken[last] -= int(running[last]) - pods
    return np.repeat(np.arange(last + 1, dtype=np.int64), taken)


def random_fit(slots: IntArray, pods: int, rng: np.random.Generator) -> IntArray | None:
    """Each pod on a node drawn uniformly among the nodes that still have room for one more."""
    free = slots.copy()
    chosen: list[int] = []
    for _ in range(pods):
        candidates = np.flatnonzero(free > 0)
        if not len(candidates):
            return None
        node = int(candidates[int(rng.integers(len(candidates)))])
        free[node] -= 1
        chosen.append(node)
    return np.array(sorted(chosen), dtype=np.int64)


class FirstFit:
    name = "first-fit"

    def choose(self, view: PlacementView) -> Chosen | None:
        if view.devices is not None:  # shared GPUs: each share on the fullest GPU that holds it
            return pod_by_pod(view, lambda state, candidates: (int(candidates[0]), None))
        bounds = scope(view)
        if bounds is None:
            return None
        start, end = bounds
        nodes = first_fit(view.slots[start:end], view.pods)
        return None if nodes is None else Chosen(nodes + start)


class RandomFit:
    name = "random"

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def choose(self, view: PlacementView) -> Chosen | None:
        bounds = scope(view)
        if bounds is None:
            return None

        def pick(state: PodByPod, candidates: IntArray) -> tuple[int, int | None]:
            node = int(candidates[int(self.rng.integers(len(candidates)))])
            if not state.shares:
                return node, None
            assert state.devices is not None
            fitting = np.flatnonzero(state.devices[node] >= view.share)  # the share on a GPU drawn too
            return node, int(fitting[int(self.rng.integers(len(fitting)))]) if len(fitting) else fullest_device(
                state.devices[node], view.share
            )

        return PodByPod(view, *bounds).place(pick)
