"""Why a pending workload waits, asked of the engine's own rules: flavors, quota, preemption.

Nothing here decides anything: each answer comes from the code the admission cycle runs.
Every flavor is judged by ``assign_flavors`` on the ClusterQueue narrowed to that one flavor
(with the cycle's own preemption oracle), the chosen assignment by ``assign_flavors`` on the
whole ClusterQueue, victims by ``find_victims`` and the gang by the placement book. The quota
tree is left exactly as found (the oracle's simulated removals are undone).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtimes.k8s.quantity import format_amount
from scheduler.engine.cluster import ClusterQueueInfo, ResourceGroupInfo
from scheduler.engine.cycle import AdmissionCycle
from scheduler.engine.feasibility import pod_larger_than_nodes
from scheduler.engine.flavors import Assignment, Mode, assign_flavors
from scheduler.engine.preemption import find_victims
from scheduler.engine.results import CycleResult
from scheduler.engine.workloads import WorkloadInfo

if TYPE_CHECKING:
    from scheduler.engine.core import EngineCore

MODE_WORDS = {
    Mode.FIT: "fits",
    Mode.RECLAIM: "fits after reclaiming quota lent to other ClusterQueues",
    Mode.PREEMPT: "fits after preempting workloads",
    Mode.NO_CANDIDATES: "needs preemption, but no admitted workload may be preempted for it",
    Mode.NO_FIT: "does not fit",
}


@dataclass(frozen=True)
class FlavorVerdict:
    """How one flavor of one resource group suits one pod set, as flavor assignment judged it."""

    pod_set: str
    resources: tuple[str, ...]
    flavor: str
    mode: str  # Fit | Reclaim | Preempt | NoCandidates | NoFit
    borrowing_level: int  # 0 = within the ClusterQueue's own quota
    words: str
    reasons: tuple[str, ...]
    chosen: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "podSet": self.pod_set,
            "resources": list(self.resources),
            "flavor": self.flavor,
            "mode": self.mode,
            "borrowingLevel": self.borrowing_level,
            "verdict": self.words,
            "reasons": list(self.reasons),
            "chosen": self.chosen,
        }


@dataclass(frozen=True)
class PreemptionNeed:
    """The preemption the chosen assignment needs, and whether policy allows any."""

    needed: bool
    allowed: bool
    policy: dict[str, str]
    victims: tuple[tuple[str, str], ...] = ()  # (workload key, Kueue preemption reason)
    words: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "needed": self.needed,
            "allowed": self.allowed,
            "policy": self.policy,
            "victims": [{"workload": key, "reason": reason} for key, reason in self.victims],
            "explanation": self.words,
        }


@dataclass(frozen=True)
class AdmissionExplanation:
    cluster_queue: str
    mode: str
    words: str
    flavors: list[FlavorVerdict]
    chosen: dict[str, str]  # resource -> flavor, as assignment would pick now
    usage: dict[str, dict[str, str]]  # flavor -> resource -> quantity the workload would charge
    borrowing: dict[str, dict[str, str]]  # flavor -> resource -> quantity it would borrow
    preemption: PreemptionNeed
    placement: str | None  # why the gang cannot be placed, when that is what stops it
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "clusterQueue": self.cluster_queue,
            "mode": self.mode,
            "verdict": self.words,
            "flavorsTried": [v.to_dict() for v in self.flavors],
            "chosenFlavors": self.chosen,
            "usage": self.usage,
            "borrowing": self.borrowing,
            "preemption": self.preemption.to_dict(),
            "placement": self.placement,
            "reasons": self.reasons,
        }


_MODE_NAMES = {
    Mode.FIT: "Fit",
    Mode.RECLAIM: "Reclaim",
    Mode.PREEMPT: "Preempt",
    Mode.NO_CANDIDATES: "NoCandidates",
    Mode.NO_FIT: "NoFit",
}


def _narrowed(cq: ClusterQueueInfo, group_index: int, flavor: str) -> ClusterQueueInfo:
    """``cq`` offering only ``flavor`` in one resource group (the rest as is), sharing its quota
    node, queue and admitted set, so flavor assignment judges that flavor alone."""
    groups = list(cq.groups)
    groups[group_index] = ResourceGroupInfo(groups[group_index].resources, (flavor,))
    return dataclasses.replace(cq, groups=groups, pod_set_plans={})


def _nested(resource_amounts: dict[tuple[str, str], int]) -> dict[str, dict[str, str]]:
    nested: dict[str, dict[str, str]] = {}
    for (flavor, resource), amount in sorted(resource_amounts.items()):
        if amount and resource != "pods":
            nested.setdefault(flavor, {})[resource] = format_amount(resource, amount)
    return nested


def _borrowing(cq: ClusterQueueInfo, assignment: Assignment) -> dict[tuple[str, str], int]:
    node = cq.node
    if node.parent is None:
        return {}
    found = {}
    for fr, amount in assignment.usage.items():
        over = node.usage.get(fr, 0) + amount - node.subtree.get(fr, 0)
        if over > 0:
            found[fr] = min(over, amount)
    return found


def _preemption(
    engine: EngineCore, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment
) -> PreemptionNeed:
    spec = cq.spec.spec.preemption
    policy: dict[str, str] = {
        "withinClusterQueue": spec.within_cluster_queue,
        "reclaimWithinCohort": spec.reclaim_within_cohort,
        "borrowWithinCohort": spec.borrow_within_cohort.policy if spec.borrow_within_cohort else "Never",
    }
    mode = assignment.mode
    if mode is Mode.FIT:
        return PreemptionNeed(False, True, policy, words="no preemption needed: it fits in the free quota")
    if mode is Mode.NO_FIT:
        return PreemptionNeed(False, False, policy, words=_no_fit_words(engine, cq, workload))
    never = spec.within_cluster_queue == "Never" and spec.reclaim_within_cohort == "Never"
    if mode is Mode.NO_CANDIDATES:
        words = (
            "preemption is needed but the ClusterQueue's policy allows none "
            "(withinClusterQueue and reclaimWithinCohort are Never)"
            if never
            else "preemption is needed but no admitted workload qualifies under the policy "
            "(lower priority in this ClusterQueue, or borrowing in the cohort)"
        )
        return PreemptionNeed(True, not never, policy, words=words)
    victims = find_victims(
        cq, workload, assignment.usage, engine.model.cluster_queues, fair_sharing=engine.config.fair_sharing
    )
    if not victims:
        return PreemptionNeed(True, True, policy, words="preemption is needed; no set of candidates frees enough")
    chosen = tuple((v.workload.key, v.reason) for v in victims)
    return PreemptionNeed(True, True, policy, chosen, f"would preempt {len(chosen)} workload(s)")


def _no_fit_words(engine: EngineCore, cq: ClusterQueueInfo, workload: WorkloadInfo) -> str:
    """Why preemption cannot admit it: never (more than the queue can reach even on an empty
    cluster, the webhook's rule), or not now (what it needs is in use where preemption may not
    take it back, within the other ClusterQueues' own quota)."""
    if assign_flavors(cq, workload, engine.model.flavors, None, empty=True).mode is not Mode.FIT:
        return "preemption cannot help: the request exceeds what the queue can ever reach"
    return (
        "preemption cannot free enough now: the quota it needs is in use within other ClusterQueues' own "
        "quota, which preemption may not take back; it fits what the queue can reach with borrowing, so it "
        "waits until that quota is released"
    )


def explain_admission(engine: EngineCore, key: str, now: float) -> AdmissionExplanation | None:
    """The engine's account of why the pending workload ``key`` is not admitted now.

    None when the workload is unknown or not waiting in a ClusterQueue (its report's reason
    already says why: no LocalQueue, inactive ClusterQueue...).
    """
    workload = engine.workloads.get(key)
    if workload is None:
        return None
    cq = engine.cluster_queue_of(workload)
    if cq is None:
        return None
    cycle = AdmissionCycle(engine, now, CycleResult())
    assignment = cycle.assign(cq, workload)
    verdicts = _flavor_verdicts(cycle, cq, workload, assignment)
    placement = None
    if assignment.mode is Mode.FIT and engine.placements.needs_placement(assignment):
        placed, why = engine.placements.place(cq, workload, assignment)
        if placed is None:
            placement = pod_larger_than_nodes(engine, assignment) or why or "no topology domain can hold the gang now"
    mode = assignment.mode
    words = MODE_WORDS[mode]
    if placement is not None:
        words = "quota fits, but the gang cannot be placed on the nodes now"
    return AdmissionExplanation(
        cluster_queue=cq.name,
        mode=_MODE_NAMES[mode],
        words=words,
        flavors=verdicts,
        chosen=_merged(assignment) if mode > Mode.NO_FIT else {},
        usage=_nested(assignment.usage) if mode > Mode.NO_FIT else {},
        borrowing=_nested(_borrowing(cq, assignment)) if mode > Mode.NO_FIT else {},
        preemption=_preemption(engine, cq, workload, assignment),
        placement=placement,
        reasons=list(dict.fromkeys(assignment.reasons)),
    )


def _flavor_verdicts(
    cycle: AdmissionCycle, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment
) -> list[FlavorVerdict]:
    """Per pod set and resource group, each flavor tried alone (the queue narrowed to it): how the
    workload would fit there and why not, and whether the real assignment ``assignment`` chose it."""
    verdicts: list[FlavorVerdict] = []
    chosen_by_pod_set = {choice.pod_set.name: choice.flavors for choice in assignment.pod_sets}
    for pod_set in workload.pod_sets:
        requested = {r for r, amount in pod_set.requests.items() if amount and r != "pods"}
        for index, group in enumerate(cq.groups):
            resources = tuple(r for r in group.resources if r in requested)
            if not resources:
                continue
            for flavor in group.flavors:
                narrowed = _narrowed(cq, index, flavor)
                attempt = cycle.assign(narrowed, workload)
                choice = next((c for c in attempt.pod_sets if c.pod_set.name == pod_set.name), None)
                mode = choice.mode if choice is not None else attempt.mode
                borrow = choice.borrow if choice is not None else attempt.borrow
                picked = chosen_by_pod_set.get(pod_set.name, {})
                verdicts.append(
                    FlavorVerdict(
                        pod_set=pod_set.name,
                        resources=resources,
                        flavor=flavor,
                        mode=_MODE_NAMES[mode],
                        borrowing_level=borrow,
                        words=MODE_WORDS[mode] + (" (borrowing)" if borrow and mode >= Mode.PREEMPT else ""),
                        reasons=tuple(dict.fromkeys(attempt.reasons)),
                        chosen=assignment.mode > Mode.NO_FIT and all(picked.get(r) == flavor for r in resources),
                    )
                )
    return verdicts


def _merged(assignment: Assignment) -> dict[str, str]:
    merged: dict[str, str] = {}
    for choice in assignment.pod_sets:
        merged.update(choice.flavors)
    return merged
