"""Node failure under admitted gangs: move the failed node's pods, or evict (Kueue TAS).

Kueue's ``TASFailedNodeReplacement`` looks for a replacement inside the domain the gang was
required to stay in and, failing that (``TASFailedNodeReplacementFailFast``), evicts the
workload with reason ``NodeFailures``. Here the placer moves only the failed node's pods
(``TopologyPlacer.replace_failed_node``); the other pods keep their nodes, so the admission's
quota is unchanged and only its topologyAssignment is rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.engine.results import EvictedWorkload
from scheduler.engine.workloads import WorkloadState

if TYPE_CHECKING:
    from scheduler.engine.core import EngineCore

NODE_FAILURES = "NodeFailures"


@dataclass(frozen=True, slots=True)
class ReplacedPlacement:
    """An admitted workload whose pods on ``node`` moved; ``placements`` per TAS flavor, all of them."""

    key: str
    node: str
    placements: dict[str, Any]


def _uses(placement: Any, node: str) -> bool:
    return any(node in pod_set.nodes for pod_set in getattr(placement, "pod_sets", ()))


def handle_node_failure(engine: EngineCore, node: str, now: float) -> list[ReplacedPlacement | EvictedWorkload]:
    """Every admitted workload placed on ``node``: re-placed, or evicted with ``NodeFailures``."""
    from scheduler.topology import PlacementFailure

    outcomes: list[ReplacedPlacement | EvictedWorkload] = []
    for key, workload in sorted(engine.workloads.items()):
        admission = workload.admission
        if workload.state is not WorkloadState.ADMITTED or admission is None:
            continue
        touched = [flavor for flavor, placement in admission.placements.items() if _uses(placement, node)]
        if not touched:
            continue
        book = engine.placements
        replaced = dict(admission.placements)
        why = ""
        for flavor in touched:
            # searched with the gang still reserved: its other pods keep their nodes
            outcome = book.replace_failed_node(flavor, replaced[flavor], node)
            if isinstance(outcome, PlacementFailure):
                why = outcome.reason
                break
            replaced[flavor] = outcome
        if not why:
            book.release(admission)
            admission.placements = replaced
            book.reserve(admission)
            outcomes.append(ReplacedPlacement(key, node, replaced))
            continue
        message = f"Node {node} failed and no replacement was found in the workload's domain: {why}"
        evicted = engine.evict(key, NODE_FAILURES, now, message=message)
        if evicted is not None:
            outcomes.append(evicted)
    return outcomes
