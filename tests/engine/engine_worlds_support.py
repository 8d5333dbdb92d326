"""Random worlds for the engine's properties (test_properties, test_preemption_shortcuts): a cohort
tree, its queues and a sequence of submit / schedule / finish events, built into an engine and played."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from builders import ClusterQueueBuilder, CohortBuilder, WorkloadBuilder, flavor, local_queue
from hypothesis import reject
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


def usage_by_queue(world: World, engine: AdmissionEngine) -> dict[str, dict[str, int]]:
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
            before = usage_by_queue(world, engine)

            def after_each(result: CycleResult) -> None:
                nonlocal before
                check(engine, before, result)
                results.append(result)
                before = usage_by_queue(world, engine)

            _settle(world, engine, now, after_each)
    return results
