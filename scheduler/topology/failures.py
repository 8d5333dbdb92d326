"""Node failure: move only the failed node's pods, staying inside the gang's domain.

The replacement pods go to the lowest domain around the failed node that has room (its NVLink
clique or block first), never above the domain the pod set was placed in (nor above its slice
domain), so the gang keeps its tier. When there is no room the gang must be requeued.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scheduler.topology.capacity import CapacityState
from scheduler.topology.describe import PlacementDescriber
from scheduler.topology.graph import IntArray, TopologyIndex
from scheduler.topology.model import GangPlacement, PlacementFailure, PodSetPlacement
from scheduler.topology.search import fewest_tightest


def replace_failed_node(
    index: TopologyIndex,
    state: CapacityState,
    describer: PlacementDescriber,
    placement: GangPlacement,
    failed_node: str,
) -> GangPlacement | PlacementFailure:
    """A new placement with the failed node's pods moved; the other pods keep their nodes.

    Pure, like ``place``: the caller then ``release``s the old placement and ``reserve``s the
    new one.
    """
    failed = index.position.get(failed_node)
    if failed is None:
        return PlacementFailure(
            f"node {failed_node} is not in flavor {placement.flavor!r}; the gang must be requeued",
            requeue=True,
        )
    pod_sets: list[PodSetPlacement] = []
    applied: list[tuple[IntArray, IntArray]] = []
    try:
        for ps in placement.pod_sets:
            ranks = [i for i, name in enumerate(ps.nodes) if name == failed_node]
            if not ranks:
                pod_sets.append(ps)
                continue
            moved = _replacement_nodes(index, state, ps, failed, len(ranks))
            if isinstance(moved, PlacementFailure):
                return moved
            positions = np.array([index.position[name] for name in ps.nodes], dtype=np.int64)
            positions[ranks] = moved
            pod_sets.append(replace(describer.describe(ps.request, positions), name=ps.name))
            delta = np.repeat(state.amounts_vector(ps.requests)[:, None], len(moved), axis=1)
            state.apply(moved, delta)
            applied.append((moved, delta))
    finally:
        for nodes, delta in reversed(applied):
            state.apply(nodes, -delta)
    return GangPlacement(placement.flavor, tuple(pod_sets))


def _replacement_nodes(
    index: TopologyIndex, state: CapacityState, ps: PodSetPlacement, failed: int, count: int
) -> IntArray | PlacementFailure:
    request = ps.request
    shape = state.shape(request.requests, request.tolerations, request.node_selector)
    counts = state.counts(shape, request.tolerations)
    bound = index.level_index(ps.level) if ps.level is not None else 0
    bound = bound or 0
    if request.slice_level is not None and request.slice_size > 1:
        bound = max(bound, index.level_index(request.slice_level) or 0)
    last = index.depth - 1
    room = 0
    for level in range(last - 1, bound - 1, -1):
        domain = int(index.node_domain[level][failed])
        start, end = int(index.starts[level][domain]), int(index.ends[level][domain])
        slots = counts.slots[start:end].copy()
        slots[failed - start] = 0
        room = int(slots.sum())
        if room >= count:
            picks = fewest_tightest(slots.tolist(), count)
            nodes = sorted(start + offset for offset, amount in picks for _ in range(amount))
            return np.array(nodes, dtype=np.int64)
    where = index.domain_label(bound, int(index.node_domain[bound][failed]))
    return PlacementFailure(
        f"node {index.names[failed]} failed: pod set {ps.name!r} needs {count} replacement pod(s) × "
        f"{request.describe_pod()} inside {where}, which has room for {room}; "
        "the gang must be requeued",
        ps.name,
        requeue=True,
    )
