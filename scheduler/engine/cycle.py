"""One admission cycle (Kueue pkg/scheduler/scheduler.go ``schedule``), run round by round.

A round takes the head of every active ClusterQueue, computes each head's flavor assignment,
orders the heads as Kueue does (non-borrowing before borrowing, then priority, then FIFO; with
fair sharing, one at a time by Kueue's tournament over the cohort tree) and processes them
against the live quota tree: admit what fits, preempt where policy allows, admit a pod set with
``minCount`` partially where a smaller count fits (by preempting too), park the rest with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.engine.fairsharing import FairNominee, FairSharingOrder
from scheduler.engine.flavors import AT_CURRENT_USAGE, Assignment, Mode, assign_flavors, search_reduced_counts
from scheduler.engine.preemption import Victim, find_victims, simulate_removal, undo_removal
from scheduler.engine.results import AdmittedWorkload, CycleResult, EvictedWorkload, PreemptedWorkload
from scheduler.engine.workloads import Admission, PodSetAssignment, WorkloadInfo

if TYPE_CHECKING:
    from scheduler.engine.cluster import ClusterQueueInfo
    from scheduler.engine.core import EngineCore
    from scheduler.engine.quota import FlavorResource


# Evicted condition reasons Kueue records when a stopped queue drains its workloads.
CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
# Kueue's message for a head skipped in a cycle because an earlier admission took its room
NO_LONGER_FITS = "Workload no longer fits after processing another workload"
_NEWER = "LowerOrNewerEqualPriority"  # the one preemption policy that reads queue order times


@dataclass(slots=True, init=False)
class _Entry:
    cq: ClusterQueueInfo
    workload: WorkloadInfo
    assignment: Assignment

    # mypyc: CONTRIBUTING.md
    def __init__(self, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment) -> None:
        self.cq = cq
        self.workload = workload
        self.assignment = assignment


def _head_order(entry: _Entry) -> tuple[int, int, float, int]:
    """The order a round's heads are processed in: non-borrowing before borrowing, then higher
    priority, then FIFO (queue order time, then submit order)."""
    workload = entry.workload
    return (entry.assignment.borrow, -workload.priority, workload.queue_order_time, workload.sequence)


def _still_fits(assignment: Assignment) -> bool:
    """Kueue's ``fits`` for an entry nominated earlier in the cycle: its usage within what its
    ClusterQueue may use now."""
    node = assignment.cluster_queue.node
    return all(node.available(fr) >= amount for fr, amount in assignment.usage.items())


# What one attempt at a head found: its placements (it fits), or the victims to evict first, or
# neither, with the reason it waits when there is one to tell.
_Decision = tuple[dict[str, object] | None, list[Victim] | None, str | None]


class AdmissionCycle:
    def __init__(self, engine: EngineCore, now: float, result: CycleResult) -> None:
        self.engine = engine
        self.now = now
        self.result = result
        self._changes = 0  # admissions and evictions so far in this cycle
        self._round_start = 0  # ... when the current round's heads were nominated
        self._drained = False  # stopped queues were drained at the start of this cycle
        # the preemption oracle's answers, while ``_changes`` is what it was when they were
        # given: candidates and quota change only with admissions and evictions
        self._probes: dict[tuple[str, FlavorResource, int, int, float], tuple[Mode, int]] = {}
        self._probes_at = 0

    # ------------------------------------------------------------------------------ rounds

    def run_round(self) -> bool:
        """Process one head per ClusterQueue. False when no ClusterQueue had a head."""
        engine = self.engine
        if not self._drained:
            self._drained = True
            self._drain_stopped_queues()
        entries: list[_Entry] = []
        found_head = False
        for cq in engine.model.cluster_queues.values():
            if not cq.active:
                continue
            workload = cq.queue.head()
            if workload is None:
                continue
            found_head = True
            why_not = self._inadmissible(cq, workload)
            if why_not is not None:
                self._park(cq, workload, why_not)
                continue
            entries.append(_Entry(cq, workload, self.assign(cq, workload)))
        if not found_head:
            return False
        self.result.rounds += 1
        self._round_start = self._changes
        if engine.config.fair_sharing:
            order = FairSharingOrder([FairNominee(e.cq.node, e.workload, e.assignment.usage) for e in entries])
            while order:
                self._process(entries[order.pop(self._changes)])
            return True
        if len(entries) > 1:
            entries.sort(key=_head_order)
        for entry in entries:
            self._process(entry)
        return True

    def _drain_stopped_queues(self) -> None:
        """stopPolicy HoldAndDrain: evict what the queue has admitted, as Kueue's workload
        controller does (Evicted reason ClusterQueueStopped / LocalQueueStopped). The workloads
        release their quota and wait, pending, until the queue is started again."""
        model = self.engine.model
        if not model.draining_cluster_queues and not model.draining_local_queues:
            return
        drained: list[tuple[WorkloadInfo, str, str]] = []
        for name in model.draining_cluster_queues:
            drained.extend(
                (w, CLUSTER_QUEUE_STOPPED, "The ClusterQueue is stopped")
                for w in model.cluster_queues[name].admitted.values()
            )
        if model.draining_local_queues:
            seen = {w.key for w, _, _ in drained}
            for cq in model.cluster_queues.values():
                drained.extend(
                    (w, LOCAL_QUEUE_STOPPED, "The LocalQueue is stopped")
                    for w in cq.admitted.values()
                    if w.key not in seen and f"{w.namespace}/{w.local_queue}" in model.draining_local_queues
                )
        for workload, reason, message in drained:
            self.engine.requeue(workload, reason, message, self.now)
            self.result.evicted.append(EvictedWorkload(workload.key, reason, message, self.now))
            self.result.pending[workload.key] = message
            self._changes += 1

    def _inadmissible(self, cq: ClusterQueueInfo, workload: WorkloadInfo) -> str | None:
        engine = self.engine
        matches = cq.namespace_matches.get(workload.namespace)
        if matches is None:
            selector = cq.spec.spec.namespace_selector
            labels = engine.model.namespace_labels(workload.namespace)
            matches = cq.namespace_matches[workload.namespace] = selector is not None and selector.matches(labels)
        if not matches:
            return f"Workload namespace {workload.namespace} doesn't match ClusterQueue {cq.name} namespaceSelector"
        stopped = engine.model.stopped_local_queues
        if not stopped:
            return None
        key = f"{workload.namespace}/{workload.local_queue}"
        lq = engine.model.local_queues.get(key) if key in stopped else None
        if lq is not None and lq.spec.stop_policy != "None":
            return f"LocalQueue {workload.local_queue} is stopped (stopPolicy {lq.spec.stop_policy})"
        return None

    def assign(self, cq: ClusterQueueInfo, workload: WorkloadInfo, counts: list[int] | None = None) -> Assignment:
        return assign_flavors(
            cq, workload, self.engine.model.flavors, self._probe, counts, fair_sharing=self.engine.config.fair_sharing
        )

    def _probe(self, cq: ClusterQueueInfo, workload: WorkloadInfo, fr: FlavorResource, amount: int) -> tuple[Mode, int]:
        """Kueue's preemption oracle: could evicting someone make ``amount`` of ``fr`` available,
        and at which borrowing level would it fit once they are gone?"""
        policy = cq.policies.preemption
        if policy.within_cluster_queue == "Never" and policy.reclaim_within_cohort == "Never":
            return Mode.NO_CANDIDATES, AT_CURRENT_USAGE
        if workload.admission is not None:  # an admitted preemptor is left out of its own candidates
            return self._oracle(cq, workload, fr, amount)
        if self._probes_at != self._changes:
            self._probes.clear()
            self._probes_at = self._changes
        # what the oracle reads of a pending preemptor: its priority, and its queue order time
        # where a policy compares equal priorities by it
        newer = _NEWER in (policy.within_cluster_queue, policy.reclaim_within_cohort)
        key = (cq.name, fr, amount, workload.priority, workload.queue_order_time if newer else 0.0)
        answer = self._probes.get(key)
        if answer is None:
            answer = self._probes[key] = self._oracle(cq, workload, fr, amount)
        return answer

    def _oracle(
        self, cq: ClusterQueueInfo, workload: WorkloadInfo, fr: FlavorResource, amount: int
    ) -> tuple[Mode, int]:
        # asked only where ``amount`` is beyond what is available: ``fr`` is contested
        victims = find_victims(
            cq,
            workload,
            {fr: amount},
            self.engine.model.cluster_queues,
            fair_sharing=self.engine.config.fair_sharing,
            contested=[fr],
        )
        if not victims:
            return Mode.NO_CANDIDATES, AT_CURRENT_USAGE
        gone = [v.workload for v in victims]
        simulate_removal(gone, self.engine.model.cluster_queues)
        try:
            borrow_after = cq.node.borrow_height(fr, amount)
        finally:
            undo_removal(gone, self.engine.model.cluster_queues)
        if all(v.workload.cluster_queue != cq.name for v in victims):
            return Mode.RECLAIM, borrow_after
        return Mode.PREEMPT, borrow_after

    # ------------------------------------------------------------------------------ one entry

    def _process(self, entry: _Entry) -> None:
        cq, workload = entry.cq, entry.workload
        assignment = entry.assignment
        if self._changes != self._round_start:
            # Something was admitted or evicted since this head was nominated. Kueue re-checks
            # that the nominated assignment still fits and otherwise skips the head for this
            # cycle (it is requeued at once and nominated again next cycle, against fresh quota).
            if assignment.mode is not Mode.FIT:
                assignment = self.assign(cq, workload)
            elif not _still_fits(assignment):
                self._skip(workload)
                return
        placements, victims, why = self._decide(cq, workload, assignment)
        if placements is not None:
            self._admit(cq, workload, assignment, placements)
            return
        if victims:
            self._preempt_and_admit(cq, workload, assignment, victims)
            return
        if self.engine.config.partial_admission and self._admit_partially(cq, workload):
            return
        self._park(cq, workload, why or self._topology_verdict(cq, workload, assignment) or assignment.message())

    def _decide(self, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment) -> _Decision:
        """Kueue's getInitialAssignments for one assignment: it fits (and places), or it fits
        once victims are gone (quota, or room for the gang on its topology), or neither."""
        if assignment.mode is Mode.FIT:
            placements, why = self.engine.placements.place(cq, workload, assignment)
            if placements is not None:
                return placements, None, None
            victims = self._victims(cq, workload, assignment, topology_only=True)
            return None, victims, None if victims else (why or assignment.message())
        if assignment.mode in (Mode.PREEMPT, Mode.RECLAIM):
            return None, self._victims(cq, workload, assignment, topology_only=False), None
        return None, None, None

    def _topology_verdict(self, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment) -> str | None:
        """For a gang that waits on quota: say so when no domain could hold it even on an empty cluster."""
        if not assignment.pod_sets:
            return None
        # (an assignment with no TAS flavor is placed as {} at once, from the cached requests)
        placements, why = self.engine.placements.place(cq, workload, assignment, simulate_empty=True)
        return None if placements is not None else f"{why} (even on an empty cluster: TopologyPlacementFailed)"

    def _victims(
        self, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment, *, topology_only: bool
    ) -> list[Victim] | None:
        book = self.engine.placements
        needs_topology = book.needs_placement(assignment)
        if topology_only and not needs_topology:
            return None
        extra_fit = book.gang_fit(cq, workload, assignment) if needs_topology else None
        return find_victims(
            cq,
            workload,
            assignment.usage,
            self.engine.model.cluster_queues,
            fair_sharing=self.engine.config.fair_sharing,
            extra_fit=extra_fit,
        )

    def _preempt_and_admit(
        self, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment, victims: list[Victim]
    ) -> None:
        for victim in victims:
            self.engine.requeue(victim.workload, "Preempted", victim.message, self.now)
            self.result.preempted.append(
                PreemptedWorkload(victim.workload.key, workload.key, victim.reason, victim.message)
            )
            self.result.pending[victim.workload.key] = victim.message
        self._changes += 1
        placements, why = self.engine.placements.place(cq, workload, assignment)
        if placements is None:  # cannot happen when the search checked placement; stay safe
            self._park(cq, workload, why or "no placement after preemption")
            return
        self._admit(cq, workload, assignment, placements)

    def _admit_partially(self, cq: ClusterQueueInfo, workload: WorkloadInfo) -> bool:
        """Kueue's partial admission: the largest counts down to ``minCount`` that fit, outright
        or by preempting (PodSetReducer.Search over getInitialAssignments' test)."""

        def attempt(counts: list[int]) -> tuple[Assignment, _Decision] | None:
            reduced = self.assign(cq, workload, counts)
            decision = self._decide(cq, workload, reduced)
            return (reduced, decision) if decision[0] is not None or decision[1] else None

        found = search_reduced_counts(workload.pod_sets, attempt)
        if found is None:
            return False
        assignment, (placements, victims, _) = found
        if placements is not None:
            self._admit(cq, workload, assignment, placements)
        else:
            assert victims
            self._preempt_and_admit(cq, workload, assignment, victims)
        return True

    def _admit(
        self, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment, placements: dict[str, object]
    ) -> None:
        pod_sets = [
            PodSetAssignment(c.pod_set.name, c.count, dict(c.flavors), dict(c.usage)) for c in assignment.pod_sets
        ]
        admission = Admission(cq.name, pod_sets, dict(assignment.usage), placements=dict(placements))
        self.engine.admit(workload, cq, admission, self.now)
        self._changes += 1
        self.result.pending.pop(workload.key, None)
        self.result.admitted.append(
            AdmittedWorkload(
                key=workload.key,
                cluster_queue=cq.name,
                flavors=admission.flavors,
                usage=dict(admission.usage),
                borrowed=dict(admission.borrowed),
                counts={p.name: p.count for p in pod_sets},
                placement=dict(placements),
            )
        )

    def _skip(self, workload: WorkloadInfo) -> None:
        """Kueue's ``skipped``: the head stays at the front of its queue, not parked, for the next round."""
        workload.reason = NO_LONGER_FITS
        self.result.pending[workload.key] = NO_LONGER_FITS

    def _park(self, cq: ClusterQueueInfo, workload: WorkloadInfo, reason: str) -> None:
        workload.reason = reason
        self.result.pending[workload.key] = reason
        cq.queue.park(workload, reason)
