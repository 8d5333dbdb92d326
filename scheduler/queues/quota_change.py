"""`set-quota`: one (flavor, resource) quota of a ClusterQueue changed, checked and rehearsed.

The new ClusterQueue is validated by Kueue's own rules (``scheduler.api.validation``, the
webhook's), shown as a before/after of the quota line, and rehearsed: the engine settles the
same workloads over the changed queues, and the difference says which pending workloads would
be admitted, which admitted ones would be preempted, and which would start borrowing (and so
could be reclaimed by their cohort).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtimes.errors import FieldError
from runtimes.k8s.quantity import parse_quantity
from scheduler.api.kueue import ClusterQueue
from scheduler.api.validation import validate_kueue_object
from scheduler.engine import WorkloadState
from scheduler.queues.state import QueueState, reload_with


class QuotaChangeError(ValueError):
    """The change names no quota of the ClusterQueue, or a value that is not a quantity."""


@dataclass(frozen=True)
class QuotaChange:
    cluster_queue: str
    flavor: str
    resource: str
    nominal: str
    borrowing_limit: str | None = None  # None: leave as it is
    lending_limit: str | None = None

    def fields(self) -> dict[str, str]:
        """camelCase field -> new value, for the fields this change sets."""
        found = {"nominalQuota": self.nominal}
        if self.borrowing_limit is not None:
            found["borrowingLimit"] = self.borrowing_limit
        if self.lending_limit is not None:
            found["lendingLimit"] = self.lending_limit
        return found


@dataclass(frozen=True)
class QuotaEffect:
    """How the queues settle after the change, compared with before."""

    admitted: list[str] = field(default_factory=list)  # pending before, admitted after
    preempted: list[str] = field(default_factory=list)  # admitted before, pending after
    newly_borrowing: list[str] = field(default_factory=list)  # admitted, and now over nominal
    pending_before: int = 0
    pending_after: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "wouldBeAdmitted": self.admitted,
            "wouldBePreempted": self.preempted,
            "wouldBecomePreemptible": self.newly_borrowing,
            "pendingBefore": self.pending_before,
            "pendingAfter": self.pending_after,
        }


@dataclass(frozen=True)
class QuotaPlan:
    old: ClusterQueue
    new: ClusterQueue
    before: dict[str, str | None]  # field -> value before
    after: dict[str, str | None]
    errors: list[FieldError]
    effect: QuotaEffect | None  # None when the change is invalid

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_dict(self) -> dict[str, Any]:
        return {
            "clusterQueue": self.new.name,
            "before": self.before,
            "after": self.after,
            "errors": [{"field": e.path, "message": e.message} for e in self.errors],
            "effect": self.effect.to_dict() if self.effect else None,
        }


# the command line's spelling of each quota field, for messages about what was typed
FLAGS = {"nominalQuota": "--nominal", "borrowingLimit": "--borrowing-limit", "lendingLimit": "--lending-limit"}


def _check_quantity(field_name: str, text: str) -> None:
    try:
        parse_quantity(text)
    except (ValueError, TypeError) as error:
        raise QuotaChangeError(f"{FLAGS.get(field_name, field_name)}: {error}") from None


def _locate(document: dict[str, Any], change: QuotaChange) -> tuple[int, int, int]:
    """(group, flavor, resource) indexes of the changed quota in ``spec.resourceGroups``."""
    groups = (document.get("spec") or {}).get("resourceGroups") or []
    flavors_seen: list[str] = []
    for g, group in enumerate(groups):
        for f, flavor in enumerate(group.get("flavors") or []):
            flavors_seen.append(str(flavor.get("name")))
            if flavor.get("name") != change.flavor:
                continue
            resources = flavor.get("resources") or []
            for r, quota in enumerate(resources):
                if quota.get("name") == change.resource:
                    return g, f, r
            names = [str(q.get("name")) for q in resources]
            raise QuotaChangeError(
                f"ClusterQueue {change.cluster_queue!r} flavor {change.flavor!r} has no quota for resource "
                f"{change.resource!r}; it lists {', '.join(names) or 'none'} (a flavor lists exactly its "
                "group's coveredResources: add the resource to coveredResources and to every flavor of the group)"
            )
    raise QuotaChangeError(
        f"ClusterQueue {change.cluster_queue!r} has no flavor {change.flavor!r}; "
        f"its flavors are {', '.join(flavors_seen) or 'none'}"
    )


def quota_fields(cq: ClusterQueue, flavor: str, resource: str) -> dict[str, str | None]:
    """The nominal quota and limits of one (flavor, resource) of ``cq``, as written."""
    for group in cq.spec.resource_groups:
        for flavor_quotas in group.flavors:
            if flavor_quotas.name != flavor:
                continue
            for quota in flavor_quotas.resources:
                if quota.name == resource:
                    return {
                        "nominalQuota": str(quota.nominal_quota),
                        "borrowingLimit": None if quota.borrowing_limit is None else str(quota.borrowing_limit),
                        "lendingLimit": None if quota.lending_limit is None else str(quota.lending_limit),
                    }
    return {"nominalQuota": None, "borrowingLimit": None, "lendingLimit": None}


def changed_cluster_queue(cq: ClusterQueue, change: QuotaChange) -> ClusterQueue:
    """A copy of ``cq`` with the change made (everything else kept as it was written)."""
    for name, value in change.fields().items():
        _check_quantity(name, value)
    document = cq.to_dict()
    g, f, r = _locate(document, change)
    quota = document["spec"]["resourceGroups"][g]["flavors"][f]["resources"][r]
    quota.update(change.fields())
    return ClusterQueue.model_validate(document)


def _borrowing(state: QueueState, cluster_queue: str, fr: tuple[str, str]) -> set[str]:
    info = state.engine.cluster_queue(cluster_queue)
    if info is None or not info.node.is_borrowing(fr):
        return set()
    return {w.key for w in info.admitted.values() if w.admission is not None and w.admission.usage.get(fr, 0) > 0}


def plan_quota_change(state: QueueState, change: QuotaChange) -> QuotaPlan:
    """Validate and rehearse ``change`` against the queues in ``state``."""
    old = state.engine.cluster_queue_objects().get(change.cluster_queue)
    if old is None:
        known = sorted(state.engine.cluster_queue_objects())
        shown = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
        raise QuotaChangeError(f"ClusterQueue {change.cluster_queue!r} does not exist; known: {shown or 'none'}")
    new = changed_cluster_queue(old, change)
    before = quota_fields(old, change.flavor, change.resource)
    after = quota_fields(new, change.flavor, change.resource)
    errors = validate_kueue_object(new, old)
    if errors:
        return QuotaPlan(old, new, before, after, errors, None)
    settled = reload_with(state, [new])
    admitted_before = {w.key for w in state.engine.all_workloads() if w.state is WorkloadState.ADMITTED}
    admitted_after = {w.key for w in settled.engine.all_workloads() if w.state is WorkloadState.ADMITTED}
    fr = (change.flavor, change.resource)
    newly_borrowing: set[str] = set()
    for name in settled.engine.cluster_queues():
        newly_borrowing |= _borrowing(settled, name, fr) - _borrowing(state, name, fr)

    def pending(s: QueueState) -> int:
        return sum(1 for w in s.engine.all_workloads() if w.state is WorkloadState.PENDING)

    effect = QuotaEffect(
        admitted=sorted(admitted_after - admitted_before),
        preempted=sorted(admitted_before - admitted_after),
        newly_borrowing=sorted(newly_borrowing & admitted_after),
        pending_before=pending(state),
        pending_after=pending(settled),
    )
    return QuotaPlan(old, new, before, after, errors, effect)
