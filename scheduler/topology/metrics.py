"""Free capacity of a flavor for metrics: free accelerators per domain, and fragmentation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduler.topology.capacity import CapacityState


@dataclass(frozen=True)
class FreeCapacity:
    """Free ``resource`` on nodes that can take pods (Ready, uncordoned, taints the flavor
    tolerates). ``per_level[label][domain path]`` is the free amount of each domain;
    ``fragmentation`` is the share of free units not on wholly free nodes (0 = all free units
    sit on empty nodes, 1 = every free unit shares its node with running pods)."""

    resource: str
    total: int
    free: int
    whole_free_nodes: int
    fragmentation: float
    per_level: dict[str, dict[str, int]]
    largest_free_domain: dict[str, int]


def free_capacity(state: CapacityState, resource: str) -> FreeCapacity:
    index = state.index
    if resource not in state.resource_index:
        return FreeCapacity(resource, 0, 0, 0, 0.0, {}, {})
    row = state.resource_index[resource]
    shape = state.shape({})
    eligible = state.eligible(shape, ())
    alloc = np.where(eligible, state.alloc[row], 0)
    free = np.where(eligible, np.maximum(state.free[row], 0), 0)
    whole = (free == alloc) & (alloc > 0)
    free_units = int(free.sum())
    on_whole = int(free[whole].sum())
    per_level: dict[str, dict[str, int]] = {}
    largest: dict[str, int] = {}
    for level in range(1, index.depth):
        label = index.level_names[level]
        assert label is not None
        sums = np.add.reduceat(free, index.starts[level]) if len(free) else np.zeros(0, np.int64)
        per_level[label] = {"/".join(index.values[level][d]): int(v) for d, v in enumerate(sums)}
        largest[label] = int(sums.max()) if len(sums) else 0
    return FreeCapacity(
        resource=resource,
        total=int(alloc.sum()),
        free=free_units,
        whole_free_nodes=int(whole.sum()),
        fragmentation=(1 - on_whole / free_units) if free_units else 0.0,
        per_level=per_level,
        largest_free_domain=largest,
    )
