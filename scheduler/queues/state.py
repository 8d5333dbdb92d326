"""The queues as the engine sees them: Kueue objects and Workloads loaded into one engine.

Every query in ``scheduler.queues`` reads a ``QueueState``. Loading applies the queue objects,
submits the Workloads (those carrying ``status.admission`` first, so they hold their quota) and
lets the engine run its admission cycles until nothing changes, as the running service would.
What those cycles decided beyond what the objects already said (workloads admitted or preempted
by this evaluation) is kept, so a report can say the cluster has not caught up yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runtimes.k8s.meta import Resource
from scheduler.api.kueue import Workload
from scheduler.engine import AdmissionEngine, EngineConfig


@dataclass
class QueueState:
    """One engine holding the queues, and what its evaluation changed."""

    engine: AdmissionEngine
    now: float  # epoch seconds the evaluation ran at (ages are measured from it)
    objects: list[Resource] = field(default_factory=list)  # what it was loaded from, for a re-run
    workloads: list[Workload] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    admitted_now: list[str] = field(default_factory=list)  # keys this evaluation admitted
    preempted_now: dict[str, str] = field(default_factory=dict)  # key -> preemptor key
    cycles: int = 0


def load_state(
    objects: Iterable[Resource],
    workloads: Iterable[Workload],
    *,
    now: float,
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
    config: EngineConfig | None = None,
    converge: bool = True,
) -> QueueState:
    """An engine loaded with ``objects`` and ``workloads`` at ``now`` (epoch seconds).

    With ``converge`` the engine runs cycles until one changes nothing: pending workloads then
    carry the engine's own reason for waiting.
    """
    engine = AdmissionEngine(config or EngineConfig())
    labels_by_namespace = {name: dict(labels) for name, labels in (namespaces or {}).items()}
    for name, labels in labels_by_namespace.items():
        engine.set_namespace(name, labels)
    object_list = list(objects)
    for obj in object_list:
        engine.apply(obj)
    ordered = sorted(workloads, key=lambda w: 0 if w.status.admission is not None else 1)
    for workload in ordered:
        engine.submit(workload, now)
    state = QueueState(engine, now, object_list, ordered, labels_by_namespace)
    if converge:
        run_to_quiescence(state)
    return state


def run_to_quiescence(state: QueueState, *, limit: int = 1000) -> None:
    """Run admission cycles at ``state.now`` until one finds nothing to try."""
    engine = state.engine
    admitted = set(state.admitted_now)
    for _ in range(limit):
        result = engine.schedule(state.now)
        state.cycles += 1
        for decision in result.admitted:
            if decision.key not in admitted:
                admitted.add(decision.key)
                state.admitted_now.append(decision.key)
        for preemption in result.preempted:
            state.preempted_now[preemption.key] = preemption.preemptor
        if not result.decisions and not result.rounds:
            break
    # a workload admitted and later preempted within the evaluation is pending again
    state.admitted_now = [key for key in state.admitted_now if _is_admitted(engine, key)]


def _is_admitted(engine: AdmissionEngine, key: str) -> bool:
    workload = engine.workload(key)
    return workload is not None and workload.admission is not None


def reload_with(state: QueueState, replaced: Iterable[Resource]) -> QueueState:
    """The same workloads over the same objects, with ``replaced`` taking the place of the
    objects of the same kind and name (or added): how the queues would settle after a change."""
    changed = {(obj.kind, obj.metadata.namespace, obj.name): obj for obj in replaced}
    objects = [changed.pop((o.kind, o.metadata.namespace, o.name), o) for o in state.objects]
    objects.extend(changed.values())
    return load_state(
        objects,
        state.workloads,
        now=state.now,
        namespaces=state.namespaces,
        config=state.engine.config,
    )
