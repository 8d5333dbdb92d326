"""Kueue's ``topologyAssignment`` in ``status.admission`` turned back into GangPlacements.

A gang admitted before the engine started holds its nodes already: these functions read which
nodes (or, below hostname level, which domains) each pod set's pods sit on, per TAS flavor, so
``PlacementBook.restore`` reserves them as it would the engine's own placements.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from typing import TYPE_CHECKING

from runtimes.k8s.core import PodTemplateSpec
from scheduler.api.kueue import Admission as AdmissionStatus
from scheduler.api.topology_assignment import (
    HOSTNAME_LABEL,
    TopologyAssignment,
    TopologyAssignmentError,
    decode_topology_assignment,
)
from scheduler.engine.workloads import PodSetInfo

if TYPE_CHECKING:
    from scheduler.topology import GangPlacement, PodSetPlacement, PodSetRequest, TopologyPlacer


def restored_placements(
    admission: AdmissionStatus,
    pod_sets: Mapping[str, PodSetInfo],
    placer_of: Callable[[str], TopologyPlacer | None],
    is_topology_flavor: Callable[[str], bool],
    live_nodes: Container[str],
) -> tuple[dict[str, GangPlacement], list[str]]:
    """Per TAS flavor, the GangPlacement that ``status.admission``'s topologyAssignments name,
    and notes on what could not be restored (each names the pod set and the reason).

    ``pod_sets`` maps pod set names to their PodSetInfo (for the pod template). Pods whose node
    (or, below hostname level, whose domain) is no longer in the flavor are left out: the rest
    keep their nodes. ``live_nodes``: the Nodes the engine knows now.
    """
    from scheduler.topology import GangPlacement

    by_flavor: dict[str, list[PodSetPlacement]] = {}
    notes: list[str] = []
    for assignment in admission.pod_set_assignments:
        flavors = sorted({f for f in assignment.flavors.values() if is_topology_flavor(f)})
        if not flavors:
            continue
        where = f"pod set {assignment.name!r}"
        raw = assignment.topology_assignment
        if raw is None:
            notes.append(f"{where}: status.admission has no topologyAssignment, so its pods hold no nodes here")
            continue
        try:
            decoded = decode_topology_assignment(raw.to_dict())
        except TopologyAssignmentError as error:
            notes.append(f"{where}: {error}; its pods hold no nodes here")
            continue
        pod_set = pod_sets.get(assignment.name)
        if pod_set is None:
            notes.append(f"{where} is not in spec.podSets; its pods hold no nodes here")
            continue
        for flavor in flavors:
            placer = placer_of(flavor)
            if placer is None:
                notes.append(f"{where}: Topology of ResourceFlavor {flavor} is not known; its pods hold no nodes")
                continue
            placed = _pod_set_placement(placer, assignment.name, pod_set.template, decoded, live_nodes, notes)
            if placed is not None:
                by_flavor.setdefault(flavor, []).append(placed)
    placements = {flavor: GangPlacement(flavor, tuple(placed)) for flavor, placed in by_flavor.items()}
    return placements, notes


def _pod_set_placement(
    placer: TopologyPlacer,
    name: str,
    template: PodTemplateSpec,
    decoded: TopologyAssignment,
    live_nodes: Container[str],
    notes: list[str],
) -> PodSetPlacement | None:
    """The pod set's pods on the nodes its topologyAssignment names, in rank order."""
    import numpy as np

    from scheduler.topology import pod_set_request_from_template

    where = f"pod set {name!r}"
    try:
        request = pod_set_request_from_template(name, decoded.pod_count, template)
    except ValueError as error:
        notes.append(f"{error}; its pods hold no nodes here")
        return None
    if decoded.levels[-1] == HOSTNAME_LABEL:
        positions, missing = _hostname_positions(placer, decoded, live_nodes)
    else:
        found = _domain_positions(placer, request, decoded, live_nodes, where, notes)
        if found is None:
            return None
        positions, missing = found
    if missing:
        shown = ", ".join(sorted(set(missing)))
        notes.append(
            f"{where}: {len(missing)} of its {decoded.pod_count} pods were placed on {shown}, "
            "no longer in the flavor; the other pods keep their nodes"
        )
    if not positions:
        return None
    return placer.describe_nodes(request, np.array(positions, dtype=np.int64))


def _hostname_positions(
    placer: TopologyPlacer, decoded: TopologyAssignment, live_nodes: Container[str]
) -> tuple[list[int], list[str]]:
    """Node positions of every pod whose node is in the flavor, and the nodes that are not."""
    positions: list[int] = []
    missing: list[str] = []
    for node in decoded.pod_nodes():
        position = placer.index.position.get(node)
        if position is None or node not in live_nodes:
            missing.append(node)
        else:
            positions.append(position)
    return positions, missing


def _domain_positions(
    placer: TopologyPlacer,
    request: PodSetRequest,
    decoded: TopologyAssignment,
    live_nodes: Container[str],
    where: str,
    notes: list[str],
) -> tuple[list[int], list[str]] | None:
    """A node for each pod of each domain (the domains above hostname level that Kueue stores):
    the domain's nodes in topology order, each filled to the room the pod shape has there."""
    topology_levels = list(placer.graph.topology_levels)
    if decoded.levels != topology_levels:
        notes.append(
            f"{where}: topologyAssignment.levels {decoded.levels} are not the Topology's levels "
            f"{topology_levels}; its pods hold no nodes here"
        )
        return None
    state, index = placer.state, placer.index
    value_positions = [index.levels.index(label) for label in topology_levels]
    members: dict[tuple[str, ...], list[int]] = {}
    for position, name in enumerate(index.names):
        if name not in live_nodes:
            continue
        values = index.node_values[name]
        members.setdefault(tuple(values[k] for k in value_positions), []).append(position)
    shape = state.shape(request.requests, request.tolerations, request.node_selector)
    room = [int(n) for n in state.counts(shape, request.tolerations).slots.tolist()]
    positions: list[int] = []
    missing: list[str] = []
    for domain in decoded.domains:
        nodes = members.get(tuple(domain.values), [])
        if not nodes:
            missing.extend(["/".join(domain.values)] * domain.count)
            continue
        left = domain.count
        for position in nodes:
            take = min(left, max(room[position], 0))
            positions.extend([position] * take)
            room[position] -= take
            left -= take
        # more pods than the domain has room for: they run there all the same
        positions.extend([nodes[k % len(nodes)] for k in range(left)])
    positions.sort()  # ranks walk the nodes in topology order, as the placer's own placements
    return positions, missing
