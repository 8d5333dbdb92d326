"""ClusterQueue and Cohort summaries: quotas, usage, borrowing and lending per flavor and resource.

Amounts come from the engine's quota tree (``QuotaNode``), so every figure is the one admission
decides with. ``lent`` has no field in Kueue's status; here it is the part of a ClusterQueue's
unused lendable quota that the rest of its cohort tree is borrowing right now (when several
ClusterQueues could be the lender, each shows what it could be lending: an upper bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtimes.k8s.quantity import format_amount
from scheduler.api.validation import validate_kueue_object
from scheduler.engine import ClusterQueueInfo, FlavorResource, QuotaNode, WorkloadState
from scheduler.queues.state import QueueState


@dataclass(frozen=True)
class ResourceLine:
    """One (flavor, resource) of a ClusterQueue or Cohort, in engine amounts."""

    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None  # None: unlimited (or no cohort)
    lending_limit: int | None  # None: all of nominal is lendable
    usage: int
    borrowed: int
    lent: int

    def to_dict(self) -> dict[str, Any]:
        def show(amount: int | None) -> str | None:
            return None if amount is None else format_amount(self.resource, amount)

        return {
            "flavor": self.flavor,
            "resource": self.resource,
            "nominal": show(self.nominal),
            "borrowingLimit": show(self.borrowing_limit),
            "lendingLimit": show(self.lending_limit),
            "usage": show(self.usage),
            "borrowed": show(self.borrowed),
            "lent": show(self.lent),
        }


@dataclass(frozen=True)
class ClusterQueueSummary:
    name: str
    cohort: str | None
    active: bool
    inactive_reason: str | None
    queueing_strategy: str
    resources: list[ResourceLine]
    admitted: int
    pending: int
    invalid: list[str] = field(default_factory=list)  # Kueue's webhook would refuse it: why

    @property
    def flags(self) -> list[str]:
        """Everything wrong with the queue, in words: inactive and why, an invalid quota."""
        found = [] if self.active else [f"inactive: {self.inactive_reason}"]
        return found + [f"invalid: {problem}" for problem in self.invalid]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cohort": self.cohort,
            "active": self.active,
            "inactiveReason": self.inactive_reason,
            "invalid": self.invalid,
            "queueingStrategy": self.queueing_strategy,
            "admitted": self.admitted,
            "pending": self.pending,
            "resources": [line.to_dict() for line in self.resources],
        }


@dataclass(frozen=True)
class CohortSummary:
    """A cohort with its own quota (the pool on top of its members) and its members."""

    name: str
    parent: str | None
    resources: list[ResourceLine]  # own nominal; usage/borrowed of the whole subtree
    cohorts: list[str] = field(default_factory=list)
    cluster_queues: list[str] = field(default_factory=list)
    problem: str | None = None  # e.g. part of a parent cycle

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "parent": self.parent,
            "cohorts": self.cohorts,
            "clusterQueues": self.cluster_queues,
            "problem": self.problem,
            "resources": [line.to_dict() for line in self.resources],
        }


def _borrowed_by_tree(state: QueueState) -> dict[int, dict[FlavorResource, int]]:
    """Per root of a cohort tree (by id), what its ClusterQueues borrow in total."""
    totals: dict[int, dict[FlavorResource, int]] = {}
    for info in state.engine.cluster_queues().values():
        node = info.node
        if node.parent is None:
            continue
        tree = totals.setdefault(id(node.root()), {})
        for fr in node.usage:
            amount = node.borrowed(fr)
            if amount:
                tree[fr] = tree.get(fr, 0) + amount
    return totals


def _lines(node: QuotaNode, borrowed_in_tree: dict[FlavorResource, int] | None) -> list[ResourceLine]:
    lines = []
    keys = list(node.nominal) + [fr for fr in node.usage if fr not in node.nominal]
    for fr in keys:
        flavor, resource = fr
        nominal = node.nominal.get(fr, 0)
        usage = node.usage.get(fr, 0)
        borrowed = node.borrowed(fr)
        lent = 0
        if borrowed_in_tree is not None and node.parent is not None:
            lendable = node.lending_limit.get(fr, nominal)
            unused_lendable = min(lendable, max(0, nominal - usage))
            others = borrowed_in_tree.get(fr, 0) - borrowed
            lent = max(0, min(unused_lendable, others))
        lines.append(
            ResourceLine(
                flavor,
                resource,
                nominal,
                node.borrowing_limit.get(fr) if node.parent is not None else None,
                node.lending_limit.get(fr) if node.parent is not None else None,
                usage,
                borrowed,
                lent,
            )
        )
    return lines


def _counts(state: QueueState) -> dict[str, tuple[int, int]]:
    """ClusterQueue -> (admitted, pending), in one pass over the workloads."""
    pending: dict[str, int] = {}
    for workload in state.engine.all_workloads():
        if workload.state is WorkloadState.PENDING and workload.cluster_queue:
            pending[workload.cluster_queue] = pending.get(workload.cluster_queue, 0) + 1
    return {name: (len(info.admitted), pending.get(name, 0)) for name, info in state.engine.cluster_queues().items()}


def _summary(
    info: ClusterQueueInfo, counts: tuple[int, int], tree: dict[FlavorResource, int] | None
) -> ClusterQueueSummary:
    return ClusterQueueSummary(
        name=info.name,
        cohort=info.cohort,
        active=info.active,
        inactive_reason=info.inactive_reason,
        queueing_strategy=info.spec.spec.queueing_strategy,
        resources=_lines(info.node, tree),
        admitted=counts[0],
        pending=counts[1],
        invalid=[str(error) for error in validate_kueue_object(info.spec)],
    )


def cluster_queue_summaries(
    state: QueueState,
    *,
    cohort: str | None = None,
    name_contains: str | None = None,
    inactive_only: bool = False,
) -> list[ClusterQueueSummary]:
    """Every ClusterQueue (sorted by name), optionally only those of one cohort tree, whose name
    contains a text, or that are inactive."""
    cluster_queues = state.engine.cluster_queues()
    counts = _counts(state)
    trees = _borrowed_by_tree(state)
    found = []
    for name in sorted(cluster_queues):
        info = cluster_queues[name]
        if name_contains and name_contains not in name:
            continue
        if inactive_only and info.active:
            continue
        if cohort is not None and cohort not in {a.name for a in info.node.ancestors()}:
            continue
        found.append(_summary(info, counts[name], trees.get(id(info.node.root()))))
    return found


def cluster_queue_summary(state: QueueState, name: str) -> ClusterQueueSummary | None:
    info = state.engine.cluster_queue(name)
    if info is None:
        return None
    counts = _counts(state)
    return _summary(info, counts[name], _borrowed_by_tree(state).get(id(info.node.root())))


def cohort_summaries(state: QueueState) -> list[CohortSummary]:
    """Every cohort (named by a ClusterQueue or a Cohort object), parents before children."""
    cohorts = state.engine.cohorts()
    summaries: dict[str, CohortSummary] = {}
    for name in sorted(cohorts):
        node = cohorts[name]
        cohort_object = state.engine.cohort_object(name)
        parent = cohort_object.spec.parent_name if cohort_object is not None else None
        problem = None
        if parent and node.parent is None:
            problem = f"parent {parent!r} is not linked: the Cohort parents form a cycle"
        summaries[name] = CohortSummary(
            name=name,
            parent=node.parent.name if node.parent is not None else parent,
            resources=_lines(node, None),
            cohorts=sorted(c.name for c in node.children if c.is_cohort),
            cluster_queues=sorted(c.name for c in node.children if not c.is_cohort),
            problem=problem,
        )
    ordered: list[CohortSummary] = []

    def visit(summary: CohortSummary) -> None:
        ordered.append(summary)
        for child in summary.cohorts:
            visit(summaries[child])

    for summary in summaries.values():
        if summary.parent is None or summary.parent not in summaries or summary.problem:
            visit(summary)
    return ordered
