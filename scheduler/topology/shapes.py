"""What the capacity state counts for: a pod shape, and its per-node and per-domain counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from runtimes.k8s.core import Toleration
from scheduler.topology.graph import IntArray
from scheduler.topology.leaf_index import SlotBits

EligibilityKey = tuple[tuple[tuple[str | None, ...], ...], tuple[tuple[str, str], ...]]
PODS = "pods"


class PodShape:
    """Per-pod amounts over the state's resources, and who may run where; a dictionary key.

    Written out rather than a frozen dataclass: the shape is looked up on every placement, and
    a dataclass's generated ``__hash__`` (rehashing every field each time) and ``__eq__`` run
    interpreted. Its fields are never reassigned.
    """

    def __init__(self, amounts: tuple[int, ...], eligibility: EligibilityKey, feasible: bool) -> None:
        self.amounts = amounts
        self.eligibility = eligibility
        self.feasible = feasible  # False when it asks for a resource no node of the flavor offers
        self._hash = hash((amounts, eligibility, feasible))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PodShape)
            and self._hash == other._hash
            and self.amounts == other.amounts
            and self.eligibility == other.eligibility
            and self.feasible == other.feasible
        )

    def __repr__(self) -> str:
        return f"PodShape(amounts={self.amounts!r}, eligibility={self.eligibility!r}, feasible={self.feasible!r})"


@dataclass(init=False)
class ShapeCounts:
    slots: IntArray  # pods of the shape that fit on each node
    caps: list[IntArray]  # per level, pods that fit in each domain (caps[-1] is slots)
    leaf: SlotBits  # the nodes holding each positive count of pods, kept in step with ``slots``

    # the most pods one domain holds, per level (-1: not counted yet), while the owning capacity
    # state's version is ``_most_version``: heads of one shape ask it again until capacity changes
    _most: list[int]
    _most_version: int

    # mypyc: CONTRIBUTING.md
    def __init__(self, slots: IntArray, caps: list[IntArray], leaf: SlotBits) -> None:
        self.slots = slots
        self.caps = caps
        self.leaf = leaf
        self._most = [-1] * len(caps)
        self._most_version = 0

    def most(self, level: int, version: int) -> int:
        """The most pods any domain of ``level`` holds (0 with no domain), on the owning state at
        ``version`` (a version names one capacity: it changes with every change of free capacity)."""
        if version != self._most_version:
            self._most = [-1] * len(self.caps)
            self._most_version = version
        known = self._most[level]
        if known < 0:
            caps = self.caps[level]
            known = self._most[level] = int(np.maximum.reduce(caps)) if len(caps) else 0
        return known


def pod_shape(
    resource_index: Mapping[str, int],
    requests: Mapping[str, int],
    tolerations: Sequence[Toleration] = (),
    node_selector: Mapping[str, str] | None = None,
) -> PodShape:
    """The shape of one pod over the resources at ``resource_index`` (resource → position)."""
    amounts = [0] * len(resource_index)
    feasible = True
    for res, amount in requests.items():
        if amount <= 0:
            continue
        if res not in resource_index:
            feasible = False
            continue
        amounts[resource_index[res]] = amount
    if PODS in resource_index and not requests.get(PODS):
        amounts[resource_index[PODS]] = 1  # every pod takes one of the node's pod slots
    key: EligibilityKey = (
        tuple((t.key, t.operator, t.value, t.effect) for t in tolerations),
        tuple(sorted((node_selector or {}).items())),
    )
    return PodShape(tuple(amounts), key, feasible)
