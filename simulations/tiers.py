"""t*, the best placement tier a gang could have had, answered by the placer's capacity mechanism.

The placement-quality metric compares the tier the engine achieved with t*: the deepest
topology level with one domain able to host the whole gang when it was admitted. Recounting
every node's free slots for every admission would be a pass over all nodes and resources each
time, so the ledger keeps a ``scheduler.topology.CapacityState`` in step with its own placements
and releases: the same per-shape per-node slots and per-domain sums, patched on the nodes a
change touches, that the topology placer keeps for its own choices. Slots and sums are integer
arithmetic (sums do not depend on the order of the additions), so t* is exact.

The ledger's nodes are grouped here by their level labels (a missing label reads as ``""``, as
the ledger's own domains do) and put in topology order for the index; readiness is the ledger's
``ready`` array, which callers flip in place, so every query first carries flips over.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from scheduler.topology import CapacityState, NodeInfo, TopologyIndex
from scheduler.topology.shapes import PodShape

# The index's own per-node level, added when the deepest ledger level does not already put every
# node in a domain of its own (the index always ends at nodes).
NODE_LEVEL = "node"
# Changes held before they are handed to the capacity state at once (or at the next query).
MAX_PENDING_CHANGES = 1024
# Amounts rows and pod shapes remembered (a run has a handful; tests may pass fresh arrays).
SHAPES_KEPT = 1024


class BestTier:
    """Answers t* for a gang shape over a node ledger's nodes, usage and readiness.

    ``allocatable`` is nodes × ``resources``; ``ready`` is the ledger's own array, read at query
    time. ``reserve`` and ``release`` must be told every pod the ledger places or takes away.
    """

    def __init__(
        self,
        names: Sequence[str],
        labels: Sequence[Mapping[str, str]],
        allocatable: np.ndarray,
        ready: np.ndarray,
        levels: Sequence[str],
        resources: Sequence[str],
    ) -> None:
        self._ready = ready
        self._depth = len(levels)
        paths = [tuple(node_labels.get(level, "") for level in levels) for node_labels in labels]
        one_per_node = len(set(paths)) == len(paths)
        index_levels = tuple(levels) if one_per_node else (*levels, NODE_LEVEL)
        order = sorted(range(len(paths)), key=lambda i: (paths[i], i))
        self._infos = [
            NodeInfo(
                name=names[i],
                labels=dict(labels[i]),
                allocatable={res: int(allocatable[i, j]) for j, res in enumerate(resources)},
                taints=(),
                usable=bool(ready[i]),
                values=paths[i] if one_per_node else (*paths[i], str(i)),
            )
            for i in order
        ]
        self._position = np.zeros(len(order), dtype=np.int64)  # ledger row -> position in the index
        self._position[order] = np.arange(len(order), dtype=np.int64)
        self._usable = ready.copy()  # readiness as the capacity state last saw it, by ledger row
        self._resources = tuple(resources)
        self._capacity = CapacityState(TopologyIndex.of_nodes(index_levels, self._infos), self._infos)
        # the capacity state's resource rows, as columns of the ledger's per-pod amounts
        self._columns = np.array([self._resources.index(res) for res in self._capacity.resources], dtype=np.int64)
        # placements and releases not yet handed to the capacity state: ledger rows, and the
        # change per pod (negative for a release) with the number of pods
        self._pending_rows: list[np.ndarray] = []
        self._pending_usage: list[tuple[np.ndarray, int]] = []
        # id(a ledger row of per-pod amounts) -> (that row, its amounts in the state's resources);
        # the ledger hands the same few shared rows again and again (``invariants.pod_amounts``)
        self._per_pod: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        # (id(amounts), node selector) -> (amounts, the capacity state's pod shape for them)
        self._shapes: dict[tuple[int, tuple[tuple[str, str], ...]], tuple[np.ndarray, PodShape]] = {}

    def reserve(self, indexes: np.ndarray, amounts: np.ndarray) -> None:
        """One pod of ``amounts`` (a ledger row) now runs on each of the ledger rows ``indexes``."""
        self._apply(indexes, amounts, taken=True)

    def release(self, indexes: np.ndarray, amounts: np.ndarray) -> None:
        """The pods ``reserve`` was told of are gone."""
        self._apply(indexes, amounts, taken=False)

    def _apply(self, indexes: np.ndarray, amounts: np.ndarray, *, taken: bool) -> None:
        if not self._depth or not len(self._capacity.resources):
            return  # never asked: best_level answers -1 without counting
        known = self._per_pod.get(id(amounts))
        if known is None or known[0] is not amounts:
            per_pod = amounts[self._columns].astype(np.int64)
            known = (amounts, per_pod, -per_pod)
            if len(self._per_pod) >= SHAPES_KEPT:
                self._per_pod.clear()
            self._per_pod[id(amounts)] = known  # the entry keeps ``amounts`` alive: its id stays its own
        self._pending_rows.append(indexes)
        self._pending_usage.append((known[1] if taken else known[2], len(indexes)))
        if len(self._pending_rows) >= MAX_PENDING_CHANGES:
            self._catch_up()

    def _catch_up(self) -> None:
        """Hand the capacity state every change since the last query in one ``apply``: most
        placements and releases are never asked about, and usage adds up the same in any order."""
        if self._pending_rows:
            nodes = self._position[np.concatenate(self._pending_rows)]
            per_change = np.stack([usage for usage, _ in self._pending_usage], axis=1)  # resources × changes
            usage = per_change.repeat([pods for _, pods in self._pending_usage], axis=1)
            self._pending_rows.clear()
            self._pending_usage.clear()
            self._capacity.apply(nodes, usage)

    def best_level(self, pods: int, amounts: np.ndarray, node_selector: Mapping[str, str]) -> int:
        """The deepest level with one domain whose free slots on nodes that are Ready and match
        ``node_selector`` hold ``pods`` pods of ``amounts`` each; -1: none. A pod always takes
        one of its node's pod slots, as in Kubernetes."""
        if not self._depth or not len(self._infos):
            return -1
        self._catch_up()
        self._carry_over_readiness()
        capacity = self._capacity
        key = (id(amounts), tuple(sorted(node_selector.items())))
        known = self._shapes.get(key)
        if known is None or known[0] is not amounts:
            requests = {res: int(amount) for res, amount in zip(self._resources, amounts.tolist(), strict=True)}
            known = (amounts, capacity.shape(requests, (), node_selector))
            if len(self._shapes) >= SHAPES_KEPT:
                self._shapes.clear()
            self._shapes[key] = known  # keeps ``amounts`` alive, as ``_per_pod`` does
        caps = capacity.counts(known[1]).caps
        for depth in range(self._depth - 1, -1, -1):
            if int(np.maximum.reduce(caps[depth + 1])) >= pods:  # the index's level 0 is the whole cluster
                return depth
        return -1

    def _carry_over_readiness(self) -> None:
        for i in np.flatnonzero(self._ready != self._usable).tolist():
            ready = bool(self._ready[i])
            position = int(self._position[i])
            info = dataclasses.replace(self._infos[position], usable=ready)
            self._infos[position] = info
            self._capacity.update_node(position, info)
            self._usable[i] = ready
