"""Flavor assignment (Kueue pkg/scheduler/flavorassigner).

For each pod set and each resource group it needs, flavors are tried in the ClusterQueue's
order. A flavor must suit the pod template (taints tolerated, node selector and required node
affinity compatible with the flavor's node labels), then each resource is checked against the
quota tree: fit (possibly borrowing), preempt (only with preemption), or no fit.
``flavorFungibility`` decides whether to stop at the first workable flavor or look further.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from runtimes.k8s.quantity import format_amount
from scheduler.api.kueue import ResourceFlavor
from scheduler.engine.cluster import ClusterQueueInfo, QueuePolicies
from scheduler.engine.flavor_match import PodSetPlan
from scheduler.engine.quota import FlavorResource
from scheduler.engine.workloads import PodSetInfo, WorkloadInfo

T = TypeVar("T")


class Mode(enum.IntEnum):
    """How well a flavor (or a whole workload) fits; higher is better, as Kueue ranks them."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4


@dataclass(slots=True, init=False)
class PodSetChoice:
    pod_set: PodSetInfo
    count: int
    flavors: dict[str, str]  # resource -> flavor
    usage: dict[FlavorResource, int]
    mode: Mode
    borrow: int

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        pod_set: PodSetInfo,
        count: int,
        flavors: dict[str, str],
        usage: dict[FlavorResource, int],
        mode: Mode,
        borrow: int,
    ) -> None:
        self.pod_set = pod_set
        self.count = count
        self.flavors = flavors
        self.usage = usage
        self.mode = mode
        self.borrow = borrow


@dataclass(slots=True, init=False)
class Assignment:
    """The flavors chosen for a workload, with the quota it needs and how it fits."""

    cluster_queue: ClusterQueueInfo
    pod_sets: list[PodSetChoice]
    usage: dict[FlavorResource, int]
    mode: Mode
    borrow: int
    reasons: list[str]

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        cluster_queue: ClusterQueueInfo,
        pod_sets: list[PodSetChoice],
        usage: dict[FlavorResource, int],
        mode: Mode,
        borrow: int,
        reasons: list[str],
    ) -> None:
        self.cluster_queue = cluster_queue
        self.pod_sets = pod_sets
        self.usage = usage
        self.mode = mode
        self.borrow = borrow
        self.reasons = reasons

    @property
    def borrows(self) -> bool:
        return self.borrow > 0

    def message(self) -> str:
        reasons = self.reasons
        if len(reasons) == 1:  # the usual failure: one resource short
            return reasons[0]
        return "; ".join(dict.fromkeys(reasons)) or "does not fit"


# PreemptionProbe(cluster_queue, workload, fr, amount) -> (mode, borrowing level after preemption):
# Kueue's preemption oracle. The mode is Mode.PREEMPT, RECLAIM or NO_CANDIDATES; the level is the
# one ``amount`` would borrow at once the victims are gone; with no victims, AT_CURRENT_USAGE: the
# level at current usage, which the flavor assignment has worked out already.
AT_CURRENT_USAGE = -1
PreemptionProbe = Callable[[ClusterQueueInfo, WorkloadInfo, FlavorResource, int], tuple[Mode, int]]


def _preferred(mode: Mode, borrow: int, other_mode: Mode, other_borrow: int, preemption_over_borrowing: bool) -> bool:
    """Kueue's isPreferred: is (mode, borrow) better than (other_mode, other_borrow)?

    NoFit is never preferred; a flavor without preemption candidates ranks below every
    workable one; then BorrowingOverPreemption compares the preemption mode first and the
    borrowing level second, PreemptionOverBorrowing the other way round.
    """
    if mode is Mode.NO_FIT:
        return False
    if other_mode is Mode.NO_FIT:
        return True
    if (mode is Mode.NO_CANDIDATES) != (other_mode is Mode.NO_CANDIDATES):
        return other_mode is Mode.NO_CANDIDATES
    if preemption_over_borrowing:
        return (borrow, -mode) < (other_borrow, -other_mode)
    return (-mode, borrow) < (-other_mode, other_borrow)


def _can_preempt_while_borrowing(cq: ClusterQueueInfo, fair_sharing: bool) -> bool:
    preemption = cq.policies.preemption
    borrow_within = preemption.borrow_within_cohort
    return (borrow_within is not None and borrow_within.policy != "Never") or (
        fair_sharing and preemption.reclaim_within_cohort != "Never"
    )


def _should_try_next_flavor(mode: Mode, borrow: int, try_next_borrow: bool, try_next_preempt: bool) -> bool:
    """Kueue's shouldTryNextFlavor: keep looking past a flavor that is not good enough."""
    if mode <= Mode.NO_CANDIDATES:
        return True
    if mode in (Mode.PREEMPT, Mode.RECLAIM) and try_next_preempt:
        return True
    return borrow > 0 and try_next_borrow


def _fits_resource_quota(
    cq: ClusterQueueInfo,
    workload: WorkloadInfo,
    fr: FlavorResource,
    value: int,
    probe: PreemptionProbe | None,
    reasons: list[str],
    *,
    empty: bool,
    fair_sharing: bool,
) -> tuple[Mode, int]:
    """Kueue's fitsResourceQuota: how ``value`` of ``fr`` fits, and the borrowing level it needs.

    A flavor that needs preemption reports the level it would borrow at once its victims are
    gone, as Kueue's preemption oracle does; PreemptionOverBorrowing and the head ordering
    (non-borrowing first) both depend on it.
    """
    node = cq.node
    flavor_name, resource = fr
    ceiling = node.potential_available(fr)
    if fr not in node.nominal and ceiling <= 0:
        reasons.append(f"flavor {flavor_name} has no quota for {resource}")
        return Mode.NO_FIT, 0
    if value > ceiling:
        reasons.append(
            f"needs {format_amount(resource, value)} {resource} in flavor {flavor_name}; "
            f"{cq.name} can reach {format_amount(resource, ceiling)}"
            + (" with borrowing" if node.parent is not None else "")
        )
        return Mode.NO_FIT, 0
    borrow, may_reclaim, available_now = node.fitting(fr, value)
    available = ceiling if empty else available_now
    if value <= available:
        return Mode.FIT, borrow
    # Kueue asks the oracle only where preemption could help: the request is within nominal
    # quota, capacity lent out below the root could be reclaimed, or policy lets a borrowing
    # ClusterQueue preempt.
    if node.nominal.get(fr, 0) >= value or may_reclaim or _can_preempt_while_borrowing(cq, fair_sharing):
        if probe is None:
            reasons.append(_shortfall(flavor_name, resource, value - available))
            return Mode.NO_CANDIDATES, borrow
        mode, borrow_after = probe(cq, workload, fr, value)
        if mode <= Mode.NO_CANDIDATES:
            reasons.append(_shortfall(flavor_name, resource, value - available))
        return mode, borrow if borrow_after == AT_CURRENT_USAGE else borrow_after
    reasons.append(_shortfall(flavor_name, resource, value - available))
    return Mode.NO_FIT, borrow


# The reason a head waits on quota, asked again on every retry of a head that waits: formatting
# the amount (interpreted code) cost more than looking the words up.
@functools.lru_cache(maxsize=4096)
def _shortfall(flavor_name: str, resource: str, missing: int) -> str:
    return (
        f"insufficient unused quota for {resource} in flavor {flavor_name}, "
        f"{format_amount(resource, missing)} more needed"
    )


_PLAN_LIMIT = 4096  # pod set plans kept per ClusterQueue


def _plan(cq: ClusterQueueInfo, pod_set: PodSetInfo, count: int) -> PodSetPlan:
    plans = cq.pod_set_plans
    plan = plans.get((id(pod_set), count))
    if plan is not None and plan.pod_set is pod_set:
        return plan
    totals = pod_set.total(count)
    by_group: dict[int, list[str]] = {}
    uncovered = None
    for resource, amount in totals.items():
        group = cq.group_of.get(resource)
        if group is None:
            if resource == "pods" or amount == 0:
                continue  # `pods` is only counted where the ClusterQueue covers it
            uncovered = f"resource {resource} is not covered by ClusterQueue {cq.name}"
            break
        by_group.setdefault(group, []).append(resource)
    if len(plans) >= _PLAN_LIMIT:
        plans.clear()
    plan = plans[(id(pod_set), count)] = PodSetPlan(pod_set, totals, by_group, uncovered)
    return plan


@dataclass(slots=True, init=False)
class _Ask:
    """What one assignment asks of the quota tree, shared by every flavor it tries."""

    cq: ClusterQueueInfo
    workload: WorkloadInfo
    probe: PreemptionProbe | None
    usage: dict[FlavorResource, int]  # chosen so far, earlier pod sets and groups included
    reasons: list[str]
    empty: bool
    fair_sharing: bool

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        cq: ClusterQueueInfo,
        workload: WorkloadInfo,
        probe: PreemptionProbe | None,
        usage: dict[FlavorResource, int],
        reasons: list[str],
        empty: bool,
        fair_sharing: bool,
    ) -> None:
        self.cq = cq
        self.workload = workload
        self.probe = probe
        self.usage = usage
        self.reasons = reasons
        self.empty = empty
        self.fair_sharing = fair_sharing


def assign_flavors(
    cq: ClusterQueueInfo,
    workload: WorkloadInfo,
    flavors: dict[str, ResourceFlavor],
    probe: PreemptionProbe | None,
    counts: list[int] | None = None,
    *,
    empty: bool = False,
    fair_sharing: bool = False,
) -> Assignment:
    """Choose a flavor per resource group for every pod set of ``workload`` in ``cq``.

    ``empty`` judges against an empty cluster (what could ever fit), for validation.
    """
    rules = cq.policies
    ask = _Ask(cq, workload, probe, {}, [], empty, fair_sharing)
    usage, reasons = ask.usage, ask.reasons
    choices: list[PodSetChoice] = []
    workload_mode = Mode.FIT
    workload_borrow = 0
    for index, pod_set in enumerate(workload.pod_sets):
        count = pod_set.count if counts is None else counts[index]
        plan = _plan(cq, pod_set, count)
        if plan.uncovered is not None:
            reasons.append(plan.uncovered)
            return Assignment(cq, choices, usage, Mode.NO_FIT, 0, reasons)
        totals = plan.totals
        chosen: dict[str, str] = {}
        pod_set_usage: dict[FlavorResource, int] = {}
        pod_set_mode = Mode.FIT
        pod_set_borrow = 0
        for group_index, resources in plan.by_group.items():
            best = _best_flavor(ask, plan, cq.groups[group_index].flavors, resources, flavors, rules)
            if best is None:
                reasons.append(f"no flavor of {cq.name} suits pod set {pod_set.name}")
                return Assignment(cq, choices, usage, Mode.NO_FIT, 0, reasons)
            flavor_name, mode, _, most_borrow = best
            for resource in resources:
                fr = (flavor_name, resource)
                chosen[resource] = flavor_name
                pod_set_usage[fr] = pod_set_usage.get(fr, 0) + totals[resource]
                usage[fr] = usage.get(fr, 0) + totals[resource]
            pod_set_mode = min(pod_set_mode, mode)
            pod_set_borrow = max(pod_set_borrow, most_borrow)
        choices.append(PodSetChoice(pod_set, count, chosen, pod_set_usage, pod_set_mode, pod_set_borrow))
        workload_mode = min(workload_mode, pod_set_mode)
        workload_borrow = max(workload_borrow, pod_set_borrow)
    return Assignment(cq, choices, usage, workload_mode, workload_borrow, reasons)


def _best_flavor(
    ask: _Ask,
    plan: PodSetPlan,
    candidates: tuple[str, ...],
    resources: list[str],
    flavors: dict[str, ResourceFlavor],
    rules: QueuePolicies,
) -> tuple[str, Mode, int, int] | None:
    """The flavor for one resource group: (flavor, representative mode, its borrowing level,
    highest level of any resource), tried in the ClusterQueue's order; None if none suits."""
    best: tuple[str, Mode, int, int] | None = None
    for flavor_name in candidates:
        flavor = flavors.get(flavor_name)
        if flavor is None:
            ask.reasons.append(f"flavor {flavor_name} not found")
            continue
        mismatch = plan.mismatch(flavor)
        if mismatch is not None:
            ask.reasons.append(mismatch)
            continue
        mode, borrow, most_borrow = _flavor_mode(ask, plan, flavor_name, resources, rules)
        candidate = (flavor_name, mode, borrow, most_borrow)
        if not _should_try_next_flavor(mode, borrow, rules.try_next_when_borrowing, rules.try_next_when_preempting):
            return candidate
        # A flavor that does not fit at all is kept only as the reason's carrier.
        if best is None or _preferred(mode, borrow, best[1], best[2], rules.preemption_over_borrowing):
            best = candidate
    return best


def _flavor_mode(
    ask: _Ask, plan: PodSetPlan, flavor_name: str, resources: list[str], rules: QueuePolicies
) -> tuple[Mode, int, int]:
    """(mode, borrowing level, highest level of any resource) of one flavor for a group.
    The representative mode is the flavor's worst resource by the configured preference
    (Kueue's granularMode); the workload's borrowing level is the highest one."""
    mode, borrow, most_borrow = Mode.FIT, 0, 0
    usage, totals = ask.usage, plan.totals
    for resource in resources:
        fr = (flavor_name, resource)
        resource_mode, resource_borrow = _fits_resource_quota(
            ask.cq,
            ask.workload,
            fr,
            usage.get(fr, 0) + totals[resource],
            ask.probe,
            ask.reasons,
            empty=ask.empty,
            fair_sharing=ask.fair_sharing,
        )
        most_borrow = max(most_borrow, resource_borrow)
        if _preferred(mode, borrow, resource_mode, resource_borrow, rules.preemption_over_borrowing):
            mode, borrow = resource_mode, resource_borrow
        if mode is Mode.NO_FIT:
            break
    return mode, borrow, most_borrow


def search_reduced_counts(pod_sets: list[PodSetInfo], attempt: Callable[[list[int]], T | None]) -> T | None:
    """Kueue's PodSetReducer.Search: the largest pod set counts, between ``count`` and
    ``minCount``, that ``attempt`` accepts (its answer), or None.

    Every pod set with a ``minCount`` gives up the same fraction of what it may lose at step
    ``i`` of ``0..Σ(count − minCount)``; a binary search finds the first step accepted, probing
    the steps in the order Go's sort.Search does, so the same counts are tried as in Kueue.
    """
    full = [p.count for p in pod_sets]
    deltas = [p.count - (p.min_count if p.min_count is not None else p.count) for p in pod_sets]
    total = sum(deltas)
    if total <= 0:
        return None
    found: T | None = None
    low, high = 0, total + 1
    while low < high:
        step = (low + high) // 2
        answer = attempt([count - delta * step // total for count, delta in zip(full, deltas, strict=True)])
        if answer is not None:
            found, high = answer, step
        else:
            low = step + 1
    return found
