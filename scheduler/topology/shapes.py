"""What the capacity state counts for: a pod shape, and its per-node and per-domain counts."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.topology.graph import IntArray
from scheduler.topology.leaf_index import SlotBits

EligibilityKey = tuple[tuple[tuple[str | None, ...], ...], tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class PodShape:
    """Per-pod amounts over the state's resources, and who may run where."""

    amounts: tuple[int, ...]
    eligibility: EligibilityKey
    feasible: bool  # False when it asks for a resource no node of the flavor offers


@dataclass(init=False)
class ShapeCounts:
    slots: IntArray  # pods of the shape that fit on each node
    caps: list[IntArray]  # per level, pods that fit in each domain (caps[-1] is slots)
    leaf: SlotBits  # the nodes holding each positive count of pods, kept in step with ``slots``

    # written out (init=False): mypyc compiles it, while a dataclass's generated __init__ runs interpreted
    def __init__(self, slots: IntArray, caps: list[IntArray], leaf: SlotBits) -> None:
        self.slots = slots
        self.caps = caps
        self.leaf = leaf
