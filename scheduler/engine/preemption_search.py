"""What both preemption searches share: taking candidates out of the quota tree and putting them
back, the fit test, and the victims they name (Kueue pkg/scheduler/preemption/preemption.go).

A search removes candidates in order until the preemptor fits, then fills back, newest removal
first, every victim it can do without, so that the victim set is minimal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from scheduler.engine.candidates import Candidate, CandidatePool, in_order, usage_by_queue
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.quota import FlavorResource
from scheduler.engine.workloads import WorkloadInfo

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"


class ExtraFit(Protocol):
    """A further condition the preemptor must meet once victims are gone: its gang placement on
    a topology (None where quota alone decides). Victims leave and come back one at a time, as
    the search takes and returns them, so each check costs at most one placement, not one per
    victim (``VictimsGone`` answers many without one)."""

    def remove(self, workload: WorkloadInfo) -> None: ...

    def restore(self, workload: WorkloadInfo) -> None: ...

    def fits(self) -> bool: ...


@dataclass(slots=True, init=False)
class Victim:
    workload: WorkloadInfo
    reason: str
    message: str

    # mypyc: CONTRIBUTING.md
    def __init__(self, workload: WorkloadInfo, reason: str, message: str) -> None:
        self.workload = workload
        self.reason = reason
        self.message = message


def remove_workload(cq: ClusterQueueInfo, workload: WorkloadInfo) -> None:
    assert workload.admission is not None
    for fr, amount in workload.admission.usage.items():
        cq.node.remove_usage(fr, amount)


def restore_workload(cq: ClusterQueueInfo, workload: WorkloadInfo) -> None:
    assert workload.admission is not None
    for fr, amount in workload.admission.usage.items():
        cq.node.add_usage(fr, amount)


def fits(cq: ClusterQueueInfo, usage: dict[FlavorResource, int], allow_borrowing: bool) -> bool:
    """Kueue's workloadFits on quota: every resource available, and within nominal unless borrowing."""
    node = cq.node
    for fr, amount in usage.items():
        if amount > node.available(fr):
            return False
        if not allow_borrowing and node.borrowing_with(fr, amount):
            return False
    return True


class Removal:
    """Candidates taken out of the quota tree while a search runs; ``restore_all`` undoes it."""

    def __init__(self, cq: ClusterQueueInfo, usage: dict[FlavorResource, int], extra_fit: ExtraFit | None) -> None:
        self.cq = cq
        self.usage = usage
        self.extra_fit = extra_fit
        self.out: list[Candidate] = []

    def take(self, candidate: Candidate) -> None:
        remove_workload(candidate.cluster_queue, candidate.workload)
        if self.extra_fit is not None:
            self.extra_fit.remove(candidate.workload)
        self.out.append(candidate)

    def give_back(self, candidate: Candidate) -> None:
        self._put_back(candidate)
        self.out.remove(candidate)

    def _put_back(self, candidate: Candidate) -> None:
        restore_workload(candidate.cluster_queue, candidate.workload)
        if self.extra_fit is not None:
            self.extra_fit.restore(candidate.workload)

    def fits(self, allow_borrowing: bool) -> bool:
        return fits(self.cq, self.usage, allow_borrowing) and (self.extra_fit is None or self.extra_fit.fits())

    def fill_back(self, allow_borrowing: bool) -> list[Candidate]:
        """Re-admit, newest removal first (the last one is needed), every victim not needed."""
        for candidate in reversed(self.out[:-1]):
            self.give_back(candidate)
            if not self.fits(allow_borrowing):
                self.take(candidate)
        return list(self.out)

    def restore_all(self) -> None:
        for candidate in reversed(self.out):
            self._put_back(candidate)
        self.out.clear()


def search(
    cq: ClusterQueueInfo,
    usage: dict[FlavorResource, int],
    pools: list[CandidatePool],
    allow_borrowing: bool,
    extra_fit: ExtraFit | None,
    still_valid: Callable[[Candidate], bool] | None = None,
) -> list[Candidate] | None:
    """Remove candidates in Kueue's order until the preemptor fits, then fill back: a minimal set.

    ``still_valid`` is asked of each candidate just before it would be taken, with the earlier
    ones already gone (Kueue's candidateIsValid); a candidate it refuses is passed over.
    """
    if not pools or not fits_without_all(cq, usage, pools, allow_borrowing):
        return None  # (with no candidates there is nobody to take, whatever fits)
    removal = Removal(cq, usage, extra_fit)
    try:
        for candidate in in_order(pools):
            if still_valid is not None and not still_valid(candidate):
                continue
            removal.take(candidate)
            if removal.fits(allow_borrowing):
                return removal.fill_back(allow_borrowing)
        return None
    finally:
        removal.restore_all()


def fits_without_all(
    cq: ClusterQueueInfo, usage: dict[FlavorResource, int], pools: list[CandidatePool], allow_borrowing: bool
) -> bool:
    """Would the preemptor's quota fit with every candidate gone? Removing usage only ever frees
    quota, so when this is False no subset of the candidates fits either and the search would
    walk them all for nothing. Removal is summed per ClusterQueue (the quota tree composes), from
    the priority levels' totals where whole levels are candidates, so no candidate is listed."""
    removed = usage_by_queue(pools)
    # only the preemptor's resources are taken out: each resource's quota arithmetic is its own,
    # and ``fits`` reads no other
    for queue, totals in removed:
        for fr, amount in totals.items():
            if fr in usage:
                queue.node.remove_usage(fr, amount)
    try:
        return fits(cq, usage, allow_borrowing)
    finally:
        for queue, totals in removed:
            for fr, amount in totals.items():
                if fr in usage:
                    queue.node.add_usage(fr, amount)


def victim(candidate: Candidate, reason: str, preemptor: WorkloadInfo) -> Victim:
    return Victim(candidate.workload, reason, message(preemptor, reason))


def message(preemptor: WorkloadInfo, reason: str) -> str:
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid}, key: {preemptor.key}) "
        f"due to {_reason_words(reason)}"
    )


def _reason_words(reason: str) -> str:
    return {
        IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
        IN_COHORT_RECLAMATION: "reclamation within the cohort",
        IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
        IN_COHORT_FAIR_SHARING: "fair sharing within the cohort",
    }[reason]
