"""Leader with workers: a gang's leader pod set and its workers placed inside one domain.

Pod sets that share a group and include a leader (``kueue.x-k8s.io/podset-group-name``) are one
placement unit: the leader goes on the node that costs the workers the fewest slots, inside the
lowest-tier domain that holds the leader and all workers; the workers then spread as a plain pod
set would. Other pod sets are placed alone.
"""

from __future__ import annotations

import numpy as np

from scheduler.topology.capacity import CapacityState
from scheduler.topology.distribution import Distributor, Picked, PodSetLevels
from scheduler.topology.graph import IntArray
from scheduler.topology.model import GangRequest, PlacementFailure, PodSetRequest
from scheduler.topology.search import tightest_domain
from scheduler.topology.shapes import PodShape, ShapeCounts

_NO_LEADER = np.int64(1) << 50


def placement_units(request: GangRequest) -> list[tuple[PodSetRequest, ...]]:
    """Pod sets in placement order: a leader and its workers together, the rest alone."""
    units: list[tuple[PodSetRequest, ...]] = []
    seen: set[str] = set()
    for ps in request.pod_sets:
        if ps.name in seen:
            continue
        partner = next(
            (
                other
                for other in request.pod_sets
                if other is not ps and ps.group is not None and other.group == ps.group
            ),
            None,
        )
        if partner is not None and (ps.is_leader or partner.is_leader):
            leader, workers = (ps, partner) if ps.is_leader else (partner, ps)
            units.append((leader, workers))
            seen.update((ps.name, partner.name))
        else:
            units.append((ps,))
            seen.add(ps.name)
    return units


def place_leader_with_workers(
    state: CapacityState,
    distributor: Distributor,
    flavor_name: str,
    leader: tuple[PodSetRequest, ShapeCounts],
    workers: tuple[PodSetRequest, PodShape, ShapeCounts],
    levels: PodSetLevels,
) -> tuple[IntArray, IntArray] | PlacementFailure:
    """(leader's node, workers' nodes) inside one domain of the lowest tier, or why not.
    ``levels`` are the workers'; both shapes must be feasible on the flavor."""
    index = distributor.index
    leader_ps, leader_counts = leader
    worker_ps, worker_shape, worker_counts = workers
    nodes = np.arange(index.size, dtype=np.int64)
    leader_use = state.pods_usage(leader_ps.requests, len(nodes))
    after = state.slots_with(worker_shape, nodes, leader_use)
    penalty = np.where(leader_counts.slots >= 1, worker_counts.slots - after, _NO_LEADER)
    need = worker_ps.count
    last = index.depth - 1
    for level in range(last, levels.top - 1, -1):
        worst = np.minimum.reduceat(penalty, index.starts[level]) if len(penalty) else penalty
        caps = np.where(worst < _NO_LEADER, worker_counts.caps[level] - worst, -1)
        if len(caps) and int(caps.max()) >= need:
            break
    else:
        room = int(caps.max()) if len(caps) else 0
        where = f"in one {index.level_names[levels.top]}" if levels.required else f"in flavor {flavor_name!r}"
        return PlacementFailure(
            f"pod sets {leader_ps.name!r} (leader, {leader_ps.describe_pod()}) and {worker_ps.name!r} "
            f"({need} pods × {worker_ps.describe_pod()}) must be placed together {where}; "
            f"the best domain has room for the leader and {max(room, 0)} workers",
            worker_ps.name,
        )
    domain = tightest_domain(caps, np.flatnonzero(caps >= need), None)
    start, end = int(index.starts[level][domain]), int(index.ends[level][domain])
    local = np.arange(start, end, dtype=np.int64)
    order = np.lexsort((local, -worker_counts.slots[start:end], penalty[start:end]))
    leader_node = int(local[order[0]])
    at = np.array([leader_node], dtype=np.int64)
    delta = leader_use[:, :1]
    state.apply(at, delta)
    try:
        picked = Picked(worker_counts.slots)
        distributor.distribute(worker_counts, level, domain, need, levels, picked)
        worker_nodes = picked.expand()  # reads the slots, which hold the leader's pod until the finally
    finally:
        state.apply(at, -delta)
    return at, worker_nodes
