"""Pod by pod: the scaffold of the policies that score nodes one pod at a time.

First-fit, best-fit, dot-product and FGD place a pod set as a Kubernetes scheduler places pods:
one after another, each on the best node by the policy's score, the next pod seeing what the
previous ones took. ``PodByPod`` keeps that running state (slots, free amounts and, where GPUs
are shared, each GPU's free share) on copies, so the view is never changed. With a required
level the pods stay inside the first domain of that level, in topology order, that holds them
all (these policies know nothing of topology; Kueue's and trainyard's do).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from scheduler.topology.fragmentation import WHOLE
from scheduler.topology.graph import IntArray
from scheduler.topology.policy import Chosen, PlacementView

# a pod's node and, where GPUs are shared and the pod takes a share, the GPU; None: none fits
Pick = Callable[["PodByPod", IntArray], tuple[int, int | None] | None]


def scope(view: PlacementView) -> tuple[int, int] | None:
    """Node positions [start, end) the pods may use: the whole flavor, or with a required level
    above the nodes the first domain there that holds them all; None when none does. (Required
    at the node level, every node is a domain of its own: ``PodByPod`` keeps the pods on one.)"""
    index = view.index
    if not view.required or view.level <= 0 or view.level == index.depth - 1:
        return 0, index.size
    starts = index.starts[view.level]
    caps = np.add.reduceat(view.slots, starts) if len(view.slots) else np.zeros(0, dtype=np.int64)
    fitting = np.flatnonzero(caps >= view.pods)
    if not len(fitting):
        return None
    domain = int(fitting[0])
    return int(starts[domain]), int(index.ends[view.level][domain])


def fullest_device(devices: IntArray, share: int) -> int:
    """The GPU with the least free share that still holds ``share`` (first of equals)."""
    room = np.where(devices >= share, devices, WHOLE + 1)
    return int(np.argmin(room))


class PodByPod:
    """The running state of one pod set being placed pod by pod."""

    def __init__(self, view: PlacementView, start: int, end: int) -> None:
        self.view = view
        self.start, self.end = start, end
        self.slots = view.slots.copy()
        self.free = view.free.copy()
        self.devices = None if view.devices is None else view.devices.copy()
        self.gpus = view.gpus_per_pod
        self.shares = view.devices is not None and view.share < WHOLE and self.gpus > 0
        # required at the node level: the first pod's node takes them all
        self.one_node = view.required and view.level == view.index.depth - 1
        self.chosen_node = -1

    def candidates(self) -> IntArray:
        """Nodes in scope that hold one more pod (every pod, on one node), in topology order."""
        if self.one_node and self.chosen_node >= 0:
            node = self.chosen_node
            return np.array([node] if self.slots[node] > 0 else [], dtype=np.int64)
        least = self.view.pods if self.one_node else 1
        return self.start + np.flatnonzero(self.slots[self.start : self.end] >= least)

    def take(self, node: int, device: int | None) -> int | None:
        """One pod on ``node`` (and its share on ``device``): the GPU used, where shared."""
        view = self.view
        self.slots[node] -= 1  # one pod of the shape fewer fits there, whatever held it back
        self.free[:, node] -= view.per_pod
        if self.devices is None or not self.gpus:
            return None
        row = self.devices[node]
        used: int | None = None
        if self.shares:
            used = fullest_device(row, view.share) if device is None else device
            row[used] -= view.share
        else:
            row[np.flatnonzero(row == WHOLE)[: self.gpus]] = 0
        if view.gpu_row is not None:
            self.free[view.gpu_row, node] = int(np.add.reduce(row == WHOLE))  # whole GPUs left
        return used

    def place(self, pick: Pick) -> Chosen | None:
        nodes: list[int] = []
        devices: list[int] = []
        for _ in range(self.view.pods):
            candidates = self.candidates()
            if not len(candidates):
                return None
            picked = pick(self, candidates)
            if picked is None:
                return None
            self.chosen_node = picked[0]
            used = self.take(picked[0], picked[1])
            nodes.append(picked[0])
            if used is not None:
                devices.append(used)
        order = np.argsort(np.array(nodes, dtype=np.int64), kind="stable")
        sorted_nodes = np.array(nodes, dtype=np.int64)[order]
        return Chosen(sorted_nodes, [devices[i] for i in order.tolist()] if devices else None)


def pod_by_pod(view: PlacementView, pick: Pick) -> Chosen | None:
    """Every pod of ``view``'s pod set on the node ``pick`` chooses, one after another."""
    bounds = scope(view)
    if bounds is None:
        return None
    return PodByPod(view, *bounds).place(pick)
