"""Hypothesis properties of the admission engine over random cohort trees and event sequences.

Each example builds a random tree (1–3 cohort levels, 2–5 ClusterQueues, random nominal,
borrowing and lending limits, random preemption and fungibility policies), then plays a random
sequence of submit / schedule / finish events. The checks do not trust the engine's accounting:
usage is recomputed from the admitted workloads' admissions, and quotas from the objects.

1. Usage never exceeds what nominal + borrowing allows at any level, nor the root's total.
2. Lending limits hold: outside a node's subtree, at most its lendingLimit of its quota is used.
3. Every preemption is one the preemptor's ClusterQueue policy permits.
4. Several admissions per cycle give the same admissions, flavors, order and preemptions as one
   head per ClusterQueue per cycle (Kueue's loop).
"""

from __future__ import annotations

from engine_worlds_support import (
    IN_COHORT,
    MILLI,
    NAMESPACE,
    RESOURCE,
    Check,
    WorkloadSpec,
    World,
    play,
    usage_by_queue,
    worlds,
)
from hypothesis import given, settings

from scheduler.engine import AdmissionEngine, CycleResult

# ---------------------------------------------------------------------------------------- checks


def _total(world: World, usage: dict[str, dict[str, int]], node: str, f: str) -> tuple[int, int]:
    """(nominal quota, usage) of ``node``'s whole subtree in flavor ``f``."""
    spec = world.nodes[node]
    quota, used = spec.nominal.get(f, 0), usage.get(node, {}).get(f, 0)
    for child in world.children(node):
        child_quota, child_used = _total(world, usage, child.name, f)
        quota, used = quota + child_quota, used + child_used
    return quota, used


def _check_quota(world: World) -> Check:
    def check(engine: AdmissionEngine, before: dict[str, dict[str, int]], result: CycleResult) -> None:
        usage = usage_by_queue(world, engine)
        for queue in world.queues:
            for f in world.flavors:
                engine_usage = engine.model.cluster_queues[queue.name].node.usage.get((f, RESOURCE), 0)
                assert engine_usage == usage[queue.name][f] * MILLI, (
                    f"{queue.name}/{f}: the engine accounts {engine_usage}m, admissions add up to {usage[queue.name][f]}"
                )
        root_quota = {f: _total(world, usage, "root", f) for f in world.flavors}
        for f, (quota, used) in root_quota.items():
            assert used <= quota, f"flavor {f}: the cohort tree uses {used} of its {quota}"
        for node in world.nodes.values():
            if node.parent is None:
                continue
            for f in world.flavors:
                quota, used = _total(world, usage, node.name, f)
                limit = node.borrowing_limit.get(f)
                if limit is not None:
                    assert used <= quota + limit, (
                        f"{node.name}/{f}: uses {used}, beyond nominal {quota} + borrowingLimit {limit}"
                    )
                lending = node.lending_limit.get(f)
                if lending is not None:
                    outside = root_quota[f][1] - used
                    assert outside <= root_quota[f][0] - quota + lending, (
                        f"{node.name}/{f}: the rest of the tree uses {outside} with only "
                        f"{root_quota[f][0] - quota} of its own + lendingLimit {lending}"
                    )

    return check


def _permits(policy: str, preemptor: WorkloadSpec, victim: WorkloadSpec) -> bool:
    if policy == "LowerPriority":
        return victim.priority < preemptor.priority
    if policy == "LowerOrNewerEqualPriority":
        return victim.priority < preemptor.priority or (
            victim.priority == preemptor.priority and victim.created > preemptor.created
        )
    return policy == "Any"


def _root(world: World, node: str) -> str:
    parent = world.nodes[node].parent
    return node if parent is None else _root(world, parent)


def _check_preemptions(world: World) -> Check:
    specs = {f"{NAMESPACE}/{w.name}": w for w in world.workloads}

    def check(engine: AdmissionEngine, before: dict[str, dict[str, int]], result: CycleResult) -> None:
        # the most a ClusterQueue can have used during this call: before, plus all it admitted
        most = {q: dict(per_flavor) for q, per_flavor in before.items()}
        for admitted in result.admitted:
            for (f, resource), amount in admitted.usage.items():
                if resource == RESOURCE:
                    most[admitted.cluster_queue][f] += amount // MILLI
        for preemption in result.preempted:
            victim, preemptor = specs[preemption.key], specs[preemption.preemptor]
            policy = world.nodes[preemptor.queue]
            what = f"{preemption.preemptor} (priority {preemptor.priority}) preempted {preemption.key} (priority {victim.priority}) for {preemption.reason}"
            if victim.queue == preemptor.queue:
                assert preemption.reason == "InClusterQueue", what
                assert _permits(policy.within, preemptor, victim), f"{what}: withinClusterQueue is {policy.within}"
                continue
            assert preemption.reason in IN_COHORT, what
            assert _root(world, victim.queue) == _root(world, preemptor.queue), f"{what}: not in one cohort tree"
            victim_queue = world.nodes[victim.queue]
            assert any(most[victim.queue][f] > victim_queue.nominal[f] for f in world.flavors), (
                f"{what}: {victim.queue} was not borrowing (usage {most[victim.queue]}, nominal {victim_queue.nominal})"
            )
            if preemption.reason == "InCohortReclaimWhileBorrowing":
                assert policy.borrow_within == "LowerPriority", f"{what}: borrowWithinCohort is {policy.borrow_within}"
                assert victim.priority < preemptor.priority, what
                assert policy.threshold is None or victim.priority <= policy.threshold, (
                    f"{what}: above maxPriorityThreshold {policy.threshold}"
                )
            else:
                assert preemption.reason != "InCohortFairSharing" or world.fair_sharing, what
                assert _permits(policy.reclaim, preemptor, victim), f"{what}: reclaimWithinCohort is {policy.reclaim}"

    return check


def _decisions(results: list[CycleResult]) -> tuple[list[tuple[str, str, dict[str, str]]], list[tuple[str, str, str]]]:
    admissions = [(a.key, a.cluster_queue, a.flavors) for r in results for a in r.admitted]
    preemptions = [(p.key, p.preemptor, p.reason) for r in results for p in r.preempted]
    return admissions, preemptions


# ---------------------------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_usage_stays_within_nominal_plus_borrowing_and_lending_limits(world: World) -> None:
    play(world, _check_quota(world))


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_every_preemption_is_permitted_by_the_policy(world: World) -> None:
    play(world, _check_preemptions(world))


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_several_per_cycle_equals_one_per_cycle(world: World) -> None:
    def nothing(engine: AdmissionEngine, before: dict[str, dict[str, int]], result: CycleResult) -> None:
        return None

    several = _decisions(play(world, nothing, several_per_cycle=True))
    one = _decisions(play(world, nothing, several_per_cycle=False))
    assert several[0] == one[0], "admissions (workload, ClusterQueue, flavors) differ, in order"
    assert several[1] == one[1], "preemptions (victim, preemptor, reason) differ, in order"
