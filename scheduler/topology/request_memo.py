"""What a placer remembers per pod-set request: its levels on the index, and its pod shape.

The engine hands the same request objects again and again (workloads of one template share
them), so a request's levels and shape are read once per object. Entries are keyed by the
object's id and keep the object alive, so the id cannot be reused while it is remembered; past
``KEPT`` entries the memo starts afresh.
"""

from __future__ import annotations

from scheduler.topology.capacity import CapacityState
from scheduler.topology.distribution import PodSetLevels, resolve_levels
from scheduler.topology.graph import TopologyIndex
from scheduler.topology.model import PlacementFailure, PodSetRequest
from scheduler.topology.shapes import PodShape

KEPT = 1024


class RequestMemo:
    """Levels and shapes of the requests one placer was asked for, on one topology index."""

    def __init__(self, index: TopologyIndex, where: str) -> None:
        self.index = index
        self.where = where  # the Topology and flavor, for messages
        # id(request) -> (request, its levels on this index)
        self._levels: dict[int, tuple[PodSetRequest, PodSetLevels | PlacementFailure]] = {}
        # id(request) -> (request, the state it was read for, its shape)
        self._shapes: dict[int, tuple[PodSetRequest, CapacityState, PodShape]] = {}

    def levels(self, ps: PodSetRequest) -> PodSetLevels | PlacementFailure:
        known = self._levels.get(id(ps))
        if known is not None and known[0] is ps:
            return known[1]
        levels = resolve_levels(self.index, ps, self.where)
        if len(self._levels) >= KEPT:
            self._levels.clear()
        self._levels[id(ps)] = (ps, levels)
        return levels

    def shape(self, state: CapacityState, ps: PodSetRequest) -> PodShape:
        known = self._shapes.get(id(ps))
        if known is not None and known[0] is ps and known[1] is state:
            return known[2]
        shape = state.shape(ps.requests, ps.tolerations, ps.node_selector)
        if len(self._shapes) >= KEPT:
            self._shapes.clear()
        self._shapes[id(ps)] = (ps, state, shape)
        return shape
