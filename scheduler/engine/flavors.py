"""Flavor assignment (Kueue pkg/scheduler/flavorassigner).

For each pod set and each resource group it needs, flavors are tried in the ClusterQueue's
order. A flavor must suit the pod template (taints tolerated, node selector and required node
affinity compatible with the flavor's node labels), then each resource is checked against the
quota tree: fit (possibly borrowing), preempt (only with preemption), or no fit.
``flavorFungibility`` decides whether to stop at the first workable flavor or look further.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from runtimes.k8s.core import SCHEDULING_TAINT_EFFECTS, NodeSelectorTerm, tolerates_all
from runtimes.k8s.quantity import format_amount
from scheduler.api.kueue import ResourceFlavor
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.quota import FlavorResource
from scheduler.engine.workloads import PodSetInfo, WorkloadInfo


class Mode(enum.IntEnum):
    """How well a flavor (or a whole workload) fits; higher is better, as Kueue ranks them."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4


@dataclass(slots=True)
class PodSetChoice:
    pod_set: PodSetInfo
    count: int
    flavors: dict[str, str]  # resource -> flavor
    usage: dict[FlavorResource, int]
    mode: Mode
    borrow: int


@dataclass(slots=True)
class Assignment:
    """The flavors chosen for a workload, with the quota it needs and how it fits."""

    cluster_queue: ClusterQueueInfo
    pod_sets: list[PodSetChoice]
    usage: dict[FlavorResource, int]
    mode: Mode
    borrow: int
    reasons: list[str] = field(default_factory=list)

    @property
    def borrows(self) -> bool:
        return self.borrow > 0

    def message(self) -> str:
        return "; ".join(dict.fromkeys(self.reasons)) or "does not fit"


# PreemptionProbe(cluster_queue, workload, fr, amount) -> Mode.PREEMPT/RECLAIM/NO_CANDIDATES
PreemptionProbe = Callable[[ClusterQueueInfo, WorkloadInfo, FlavorResource, int], Mode]


def flavor_mismatch(flavor: ResourceFlavor, pod_set: PodSetInfo) -> str | None:
    """Why ``pod_set`` cannot run on ``flavor``'s nodes, or None when it can."""
    spec = flavor.spec
    tolerations = [*pod_set.tolerations, *spec.tolerations]
    if not tolerates_all(tolerations, spec.node_taints, SCHEDULING_TAINT_EFFECTS):
        untolerated = next(
            t
            for t in spec.node_taints
            if t.effect in SCHEDULING_TAINT_EFFECTS and not any(x.tolerates(t) for x in tolerations)
        )
        return f"untolerated taint {untolerated.key}={untolerated.value or ''}:{untolerated.effect} in flavor {flavor.name}"
    labels = spec.node_labels
    for key, value in pod_set.node_selector.items():
        if key in labels and labels[key] != value:
            return f"flavor {flavor.name} doesn't match node selector {key}={value}"
    if pod_set.required_affinity and not any(_term_matches(t, labels) for t in pod_set.required_affinity):
        return f"flavor {flavor.name} doesn't match the required node affinity"
    return None


def _term_matches(term: NodeSelectorTerm, labels: dict[str, str]) -> bool:
    # Only keys the flavor defines are evaluated, as Kueue does: other keys are decided by the
    # kube-scheduler among the flavor's nodes.
    return all(req.matches(labels) for req in term.match_expressions if req.key in labels)


def _better(
    mode: Mode,
    borrow: int,
    best_mode: Mode,
    best_borrow: int,
    preemption_over_borrowing: bool,
) -> bool:
    if preemption_over_borrowing:
        return (borrow, -mode) < (best_borrow, -best_mode)
    return (-mode, borrow) < (-best_mode, best_borrow)


def assign_flavors(
    cq: ClusterQueueInfo,
    workload: WorkloadInfo,
    flavors: dict[str, ResourceFlavor],
    probe: PreemptionProbe | None,
    counts: list[int] | None = None,
    *,
    empty: bool = False,
) -> Assignment:
    """Choose a flavor per resource group for every pod set of ``workload`` in ``cq``.

    ``empty`` judges against an empty cluster (what could ever fit), for validation.
    """
    node = cq.node
    fungibility = cq.spec.spec.flavor_fungibility
    try_next_borrow = fungibility.try_next_when_borrowing
    try_next_preempt = fungibility.try_next_when_preempting
    preemption_over_borrowing = fungibility.preference == "PreemptionOverBorrowing"
    usage: dict[FlavorResource, int] = {}
    choices: list[PodSetChoice] = []
    reasons: list[str] = []
    workload_mode = Mode.FIT
    workload_borrow = 0
    for index, pod_set in enumerate(workload.pod_sets):
        count = pod_set.count if counts is None else counts[index]
        totals = pod_set.total(count)
        by_group: dict[int, list[str]] = {}
        for resource, amount in totals.items():
            group = cq.group_of.get(resource)
            if group is None:
                if resource == "pods" or amount == 0:
                    continue  # `pods` is only counted where the ClusterQueue covers it
                reasons.append(f"resource {resource} is not covered by ClusterQueue {cq.name}")
                return Assignment(cq, choices, usage, Mode.NO_FIT, 0, reasons)
            by_group.setdefault(group, []).append(resource)
        chosen: dict[str, str] = {}
        pod_set_usage: dict[FlavorResource, int] = {}
        pod_set_mode = Mode.FIT
        pod_set_borrow = 0
        for group_index, resources in by_group.items():
            best: tuple[str, Mode, int] | None = None
            for flavor_name in cq.groups[group_index].flavors:
                flavor = flavors.get(flavor_name)
                if flavor is None:
                    reasons.append(f"flavor {flavor_name} not found")
                    continue
                mismatch = flavor_mismatch(flavor, pod_set)
                if mismatch is not None:
                    reasons.append(mismatch)
                    continue
                mode, borrow = Mode.FIT, 0
                for resource in resources:
                    fr = (flavor_name, resource)
                    value = usage.get(fr, 0) + totals[resource]
                    if fr not in node.nominal and node.potential_available(fr) <= 0:
                        reasons.append(f"flavor {flavor_name} has no quota for {resource}")
                        mode = Mode.NO_FIT
                        break
                    ceiling = node.potential_available(fr)
                    if value > ceiling:
                        reasons.append(
                            f"needs {format_amount(resource, value)} {resource} in flavor {flavor_name}; "
                            f"{cq.name} can reach {format_amount(resource, ceiling)}"
                            + (" with borrowing" if node.parent is not None else "")
                        )
                        mode = Mode.NO_FIT
                        break
                    available = ceiling if empty else node.available(fr)
                    if value <= available:
                        borrow = max(borrow, node.borrow_height(fr, value))
                        continue
                    resource_mode = probe(cq, workload, fr, value) if probe is not None else Mode.NO_CANDIDATES
                    if resource_mode <= Mode.NO_CANDIDATES:
                        reasons.append(
                            f"insufficient unused quota for {resource} in flavor {flavor_name}, "
                            f"{format_amount(resource, value - available)} more needed"
                        )
                    mode = min(mode, resource_mode)
                    borrow = max(borrow, node.borrow_height(fr, value))
                if mode <= Mode.NO_CANDIDATES:
                    if best is None:
                        best = (flavor_name, mode, borrow)
                    continue
                if (
                    best is None
                    or best[1] <= Mode.NO_CANDIDATES
                    or _better(mode, borrow, best[1], best[2], preemption_over_borrowing)
                ):
                    best = (flavor_name, mode, borrow)
                stop = (mode == Mode.FIT and (borrow == 0 or not try_next_borrow)) or (
                    mode in (Mode.PREEMPT, Mode.RECLAIM) and not try_next_preempt
                )
                if stop:
                    break
            if best is None:
                reasons.append(f"no flavor of {cq.name} suits pod set {pod_set.name}")
                return Assignment(cq, choices, usage, Mode.NO_FIT, 0, reasons)
            flavor_name, mode, borrow = best
            for resource in resources:
                fr = (flavor_name, resource)
                chosen[resource] = flavor_name
                pod_set_usage[fr] = pod_set_usage.get(fr, 0) + totals[resource]
                usage[fr] = usage.get(fr, 0) + totals[resource]
            pod_set_mode = min(pod_set_mode, mode)
            pod_set_borrow = max(pod_set_borrow, borrow)
        choices.append(PodSetChoice(pod_set, count, chosen, pod_set_usage, pod_set_mode, pod_set_borrow))
        workload_mode = min(workload_mode, pod_set_mode)
        workload_borrow = max(workload_borrow, pod_set_borrow)
    return Assignment(cq, choices, usage, workload_mode, workload_borrow, reasons)
