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

from collections.abc import Callable
from dataclasses import dataclass, field

from builders import ClusterQueueBuilder, CohortBuilder, WorkloadBuilder, flavor, local_queue
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from scheduler.api.kueue import ClusterQueue, Cohort, Workload
from scheduler.engine import AdmissionEngine, CycleResult, EngineConfig, WorkloadState

NAMESPACE = "team"
RESOURCE = "cpu"
MILLI = 1000  # engine amounts for cpu are milli-cores
IN_COHORT = {"InCohortReclamation", "InCohortReclaimWhileBorrowing", "InCohortFairSharing"}


@dataclass
class QueueSpec:
    name: str
    parent: str | None  # cohort name
    nominal: dict[str, int]  # flavor -> cpus
    borrowing_limit: dict[str, int | None]
    lending_limit: dict[str, int | None]
    within: str = "Never"
    reclaim: str = "Never"
    borrow_within: str | None = None
    threshold: int | None = None


@dataclass
class WorkloadSpec:
    name: str
    queue: str
    cpus: int
    priority: int
    created: int


@dataclass
class World:
    flavors: list[str]
    cohorts: list[QueueSpec]
    queues: list[QueueSpec]
    workloads: list[WorkloadSpec]
    events: list[tuple[str, int]]
    fair_sharing: bool
    fungibility: tuple[str, str]
    nodes: dict[str, QueueSpec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.nodes = {n.name: n for n in [*self.cohorts, *self.queues]}

    def children(self, name: str) -> list[QueueSpec]:
        return [n for n in self.nodes.values() if n.parent == name]


@st.composite
def _limits(draw: st.DrawFn, nominal: int, has_parent: bool) -> tuple[int | None, int | None]:
    if not has_parent:
        return None, None  # Kueue: limits need a cohort/parent
    borrowing = draw(st.one_of(st.none(), st.integers(0, 6)))
    lending = draw(st.one_of(st.none(), st.integers(0, nominal)))
    return borrowing, lending


@st.composite
def worlds(draw: st.DrawFn) -> World:
    flavors = ["f1", "f2"][: draw(st.integers(1, 2))]
    depth = draw(st.integers(1, 3))
    cohort_names = ["root"]
    parents: dict[str, str | None] = {"root": None}
    if depth >= 2:
        for index in range(draw(st.integers(1, 2))):
            cohort_names.append(f"mid-{index}")
            parents[f"mid-{index}"] = "root"
    if depth == 3:
        cohort_names.append("deep")
        parents["deep"] = "mid-0"

    def quotas(has_parent: bool, most: int) -> tuple[dict[str, int], dict[str, int | None], dict[str, int | None]]:
        nominal, borrowing, lending = {}, {}, {}
        for f in flavors:
            nominal[f] = draw(st.integers(0, most))
            borrowing[f], lending[f] = draw(_limits(nominal[f], has_parent))
        return nominal, borrowing, lending

    cohorts = [QueueSpec(name, parents[name], *quotas(parents[name] is not None, 3)) for name in cohort_names]
    queues = []
    for index in range(draw(st.integers(2, 5))):
        queue = QueueSpec(f"cq-{index}", draw(st.sampled_from(cohort_names)), *quotas(True, 6))
        queue.within = draw(st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]))
        queue.reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
        if queue.reclaim != "Never" and draw(st.booleans()):
            queue.borrow_within = "LowerPriority"
            queue.threshold = draw(st.one_of(st.none(), st.integers(0, 3)))
        queues.append(queue)
    count = draw(st.integers(2, 14))
    workloads = [
        WorkloadSpec(
            f"w-{i}",
            draw(st.sampled_from([q.name for q in queues])),
            draw(st.integers(2, 8)),
            draw(st.integers(0, 3)),
            i,
        )
        for i in range(count)
    ]
    # Submit in creation order, often scheduling in between so that later (maybe higher-priority)
    # workloads meet earlier ones already admitted: that is where preemption happens.
    events: list[tuple[str, int]] = []
    for i in range(count):
        events.append(("submit", i))
        if draw(st.booleans()):
            events.append(("schedule", 0))
        if draw(st.integers(0, 4)) == 0:
            events.append(("finish", draw(st.integers(0, 50))))
    events.append(("schedule", 0))
    fungibility = (
        draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
        draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
    )
    return World(flavors, cohorts, queues, workloads, events, draw(st.booleans()), fungibility)


# ---------------------------------------------------------------------------------------- building


def _cohort_object(spec: QueueSpec) -> Cohort:
    builder = CohortBuilder(spec.name)
    if spec.parent:
        builder.parent(spec.parent)
    for f, nominal in spec.nominal.items():
        builder.quota(
            f, RESOURCE, nominal, borrowing_limit=spec.borrowing_limit[f], lending_limit=spec.lending_limit[f]
        )
    return builder.obj()


def _queue_object(spec: QueueSpec, fungibility: tuple[str, str]) -> ClusterQueue:
    builder = ClusterQueueBuilder(spec.name).flavor_fungibility(
        when_can_borrow=fungibility[0], when_can_preempt=fungibility[1]
    )
    if spec.parent:
        builder.cohort(spec.parent)
    builder.preemption(
        within_cluster_queue=spec.within,
        reclaim_within_cohort=spec.reclaim,
        borrow_within_cohort=spec.borrow_within,
        max_priority_threshold=spec.threshold,
    )
    for f, nominal in spec.nominal.items():
        builder.quota(
            f, RESOURCE, nominal, borrowing_limit=spec.borrowing_limit[f], lending_limit=spec.lending_limit[f]
        )
    return builder.obj()


def _workload_object(spec: WorkloadSpec) -> Workload:
    return (
        WorkloadBuilder(spec.name, NAMESPACE)
        .queue(spec.queue)
        .priority(spec.priority)
        .created(spec.created)
        .pod_set(count=spec.cpus, cpu="1")
        .obj()
    )


def _engine(world: World, *, several_per_cycle: bool) -> AdmissionEngine:
    engine = AdmissionEngine(
        EngineConfig(fair_sharing=world.fair_sharing, multiple_admissions_per_cycle=several_per_cycle)
    )
    for name in world.flavors:
        engine.apply(flavor(name))
    for cohort in world.cohorts:
        engine.apply(_cohort_object(cohort))
    for queue in world.queues:
        engine.apply(_queue_object(queue, world.fungibility))
        engine.apply(local_queue(queue.name, NAMESPACE, queue.name))
    return engine


# ---------------------------------------------------------------------------------------- playing

Check = Callable[[AdmissionEngine, dict[str, dict[str, int]], CycleResult], None]


def _usage_by_queue(world: World, engine: AdmissionEngine) -> dict[str, dict[str, int]]:
    """Per ClusterQueue, per flavor: cpus held by admitted workloads, summed from their admissions."""
    usage: dict[str, dict[str, int]] = {q.name: dict.fromkeys(world.flavors, 0) for q in world.queues}
    for workload in engine.workloads.values():
        if workload.state is not WorkloadState.ADMITTED:
            continue
        assert workload.admission is not None, f"{workload.key} is admitted without an admission"
        held = sum(amount for (_, resource), amount in workload.admission.usage.items() if resource == RESOURCE)
        requested = next(w.cpus for w in world.workloads if f"{NAMESPACE}/{w.name}" == workload.key)
        assert held == requested * MILLI, f"{workload.key} holds {held}m cpu but requested {requested}"
        for (f, resource), amount in workload.admission.usage.items():
            if resource == RESOURCE:
                usage[workload.admission.cluster_queue][f] += amount // MILLI
    return usage


def _settle(world: World, engine: AdmissionEngine, now: float, after_each: Callable[[CycleResult], None]) -> None:
    """Schedule until a call neither decides anything nor finds a head to try (Kueue loops forever).

    Kueue's own policies can make preemptions go round for ever, and Kueue would preempt in a
    loop there too: a workload within nominal quota reclaims from a borrower whatever the
    priorities (reclaimWithinCohort Any), the borrower's ClusterQueue then preempts by priority
    while borrowing (withinClusterQueue / borrowWithinCohort), and so on; under fair sharing,
    LessThanInitialShare lets two ClusterQueues take turns when each one's new share is below
    the other's old one. A world whose preemptions (each checked against its policy by the
    other properties) bring back an admitted set seen before is discarded, not failed; one that
    neither settles nor cycles is a bug.
    """
    seen: set[frozenset[str]] = set()
    for _ in range(500):
        result = engine.schedule(now)
        after_each(result)
        if not result.decisions and not result.rounds:
            return
        state = frozenset(k for k, w in engine.workloads.items() if w.state is WorkloadState.ADMITTED)
        if result.preempted and state in seen:
            reject()  # a preemption cycle Kueue's policies allow; see above
        seen.add(state)
    raise AssertionError("scheduling did not settle in 500 cycles")


def play(world: World, check: Check, *, several_per_cycle: bool = True) -> list[CycleResult]:
    """Run ``world``'s events, calling ``check`` after every schedule call with the usage before it."""
    engine = _engine(world, several_per_cycle=several_per_cycle)
    results: list[CycleResult] = []
    now = 0.0
    for op, argument in world.events:
        now += 1
        if op == "submit":
            engine.submit(_workload_object(world.workloads[argument]), now)
        elif op == "finish":
            admitted = sorted(k for k, w in engine.workloads.items() if w.state is WorkloadState.ADMITTED)
            if admitted:
                engine.finish(admitted[argument % len(admitted)], now)
        else:
            before = _usage_by_queue(world, engine)

            def after_each(result: CycleResult) -> None:
                nonlocal before
                check(engine, before, result)
                results.append(result)
                before = _usage_by_queue(world, engine)

            _settle(world, engine, now, after_each)
    return results


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
        usage = _usage_by_queue(world, engine)
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
