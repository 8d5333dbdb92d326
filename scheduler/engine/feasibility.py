"""Can a workload ever be admitted? The webhook's and validation's "never fits" check.

Quota: its total request must be reachable through borrowing up the cohort (Kueue's
``potentialAvailable``) in some flavor that suits its pods. Topology: a domain at the required
level must hold the gang when nothing else runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtimes.k8s.quantity import format_amount
from scheduler.api.kueue import Workload
from scheduler.engine.flavors import Assignment, Mode, assign_flavors
from scheduler.engine.workloads import workload_info

if TYPE_CHECKING:
    from scheduler.engine.core import EngineCore


def never_fits_reason(engine: EngineCore, workload: Workload) -> str | None:
    """Why ``workload`` could never be admitted, even on an empty cluster; None if it could."""
    model = engine.model
    info = workload_info(workload, priority=engine.priority_of(workload), created=0.0, sequence=-1)
    lq = model.local_queues.get(f"{info.namespace}/{info.local_queue}")
    if lq is None:
        return f"LocalQueue {info.local_queue!r} does not exist in namespace {info.namespace}"
    cq = model.cluster_queues.get(lq.spec.cluster_queue)
    if cq is None:
        return f"ClusterQueue {lq.spec.cluster_queue!r} (of LocalQueue {info.local_queue}) does not exist"
    assignment = assign_flavors(cq, info, model.flavors, None, empty=True)
    if assignment.mode is not Mode.FIT:
        return assignment.message()
    placements, why = engine.placements.place(cq, info, assignment, simulate_empty=True)
    if placements is not None:
        return None
    # the placer counts room in pods; where not one pod fits any node, the node size says why
    return pod_larger_than_nodes(engine, assignment) or why


def pod_larger_than_nodes(engine: EngineCore, assignment: Assignment) -> str | None:
    """Why no node of a pod set's flavor could hold one of its pods even when empty: a pod asks
    more of a resource than every node of that flavor has (16 GPUs on 8-GPU nodes); else None."""
    from scheduler.topology.graph import flavor_selects

    for choice in assignment.pod_sets:
        for resource, flavor_name in choice.flavors.items():
            flavor = engine.model.flavors.get(flavor_name)
            amount = choice.pod_set.requests.get(resource, 0)
            if flavor is None or amount <= 0:
                continue
            sizes = [
                quantity.amount(resource) if (quantity := node.status.allocatable.get(resource)) is not None else 0
                for node in engine.model.nodes.values()
                if flavor_selects(flavor, node.metadata.labels)
            ]
            if not sizes or amount <= max(sizes):
                continue
            largest = format_amount(resource, max(sizes))
            each = f"{largest} {resource} each" if len(set(sizes)) == 1 else f"at most {largest} {resource}"
            return (
                f"pod set {choice.pod_set.name!r} asks {format_amount(resource, amount)} {resource} per pod, and "
                f"the nodes of flavor {flavor_name} have {each}: no node can hold one of its pods; ask for at "
                f"most {largest} {resource} per pod (more nodes, each with fewer)"
            )
    return None
