"""What a victim whose eviction did not land still holds on the server, and who may stand on it.

The engine released each victim's quota when it decided, and the rest of the cycle decided on
what that left. A victim whose eviction write failed still holds its quota (within its cohort
tree) and its nodes (shared across trees), so the queue controller holds back every admission
of that cycle that could stand on them.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.engine import AdmissionEngine, AdmittedWorkload


def quota_trees_held(engine: AdmissionEngine, victims: Iterable[str]) -> dict[str, str | None]:
    """Each victim's quota tree, read before the cycle's writes (None: its queue is unknown)."""
    trees = {}
    for key in victims:
        info = engine.workload(key)
        trees[key] = quota_tree(engine, None if info is None else info.cluster_queue)
    return trees


def quota_tree(engine: AdmissionEngine, cluster_queue: str | None) -> str | None:
    """The root of the cohort tree ``cluster_queue`` shares quota in (itself without a cohort)."""
    info = engine.cluster_queue(cluster_queue) if cluster_queue is not None else None
    if info is None:
        return cluster_queue
    root = info.node.root()
    return f"cohort {root.name}" if root.is_cohort else f"clusterqueue {root.name}"


def may_stand_on(engine: AdmissionEngine, admitted: AdmittedWorkload, still_held: set[str | None]) -> bool:
    """Whether ``admitted`` may use quota or nodes that victims in ``still_held`` keep.

    Quota is shared within a cohort tree; a victim whose queue the engine no longer knows (None)
    could have lent to anyone. Nodes are shared across trees: a gang given a topology placement
    may have been put where a victim's pods still run.
    """
    return None in still_held or quota_tree(engine, admitted.cluster_queue) in still_held or bool(admitted.placement)
