"""Naming a pod set's chosen nodes: the lowest domain holding them, its level and its children.

``PlacementDescriber`` turns node positions (one per rank, in topology order) into the
``PodSetPlacement`` the engine records; failures and restored admissions describe their nodes
the same way as fresh placements do.
"""

from __future__ import annotations

from scheduler.topology.graph import IntArray, TopologyIndex
from scheduler.topology.model import PodSetPlacement, PodSetRequest


class PlacementDescriber:
    """Describes placements on one topology index (rebuilt with it)."""

    def __init__(self, index: TopologyIndex, topology_levels: tuple[str, ...]) -> None:
        self.index = index
        self.topology_levels = topology_levels
        # where the Topology's own levels sit among the effective levels (the clique is extra)
        self.topology_positions = tuple(i for i, label in enumerate(index.levels) if label in topology_levels)
        self._domains = index.node_domain_lists

    def describe(self, request: PodSetRequest, nodes: IntArray) -> PodSetPlacement:
        """The placement of ``request`` on the nodes at positions ``nodes`` (one per rank)."""
        index = self.index
        positions: list[int] = nodes.tolist()
        level, domain, spanned = self._lowest_common_domain(positions)
        names = index.names
        return PodSetPlacement(
            name=request.name,
            request=request,
            level=index.level_names[level],
            domain=index.values[level][domain] if positions else (),
            nodes=tuple([names[i] for i in positions]),
            spanned=spanned,
            topology_levels=self.topology_levels,
            node_values=index.node_values,
            value_positions=self.topology_positions,
        )

    def lowest_common_domain(self, nodes: IntArray) -> tuple[int, int, int]:
        """(level, domain, children spanned) of the lowest domain holding all ``nodes``."""
        return self._lowest_common_domain(nodes.tolist())

    def _lowest_common_domain(self, positions: list[int]) -> tuple[int, int, int]:
        """``lowest_common_domain`` of positions as a list, read through the index's domains as
        lists (plain ints, where numpy would box each scalar it hands back)."""
        if not positions:
            return 0, 0, 0
        domains = self._domains
        last = len(domains) - 1
        if positions[0] == positions[-1]:  # in topology order: all on one node
            return last, domains[last][positions[0]], 1
        # a level's domains are runs of neighbouring nodes: the lowest and the highest node
        # share a domain only when every node between them does
        low, high = min(positions), max(positions)
        for level in range(last, -1, -1):
            ids = domains[level]
            if ids[low] == ids[high]:
                if level == last:
                    return level, ids[low], 1
                below = domains[level + 1]
                return level, ids[low], len({below[p] for p in positions})
        return 0, 0, 0  # unreachable: level 0 has one domain
