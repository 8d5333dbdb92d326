"""A rehearsal: the current queues (Kueue objects and Workloads) turned into a simulator scenario."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import (
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    ClusterQueue,
    LocalQueue,
    Topology,
    Workload,
    WorkloadPriorityClass,
)
from simulations.cluster_spec import GPU_RESOURCE, LOCAL_QUEUE_NAME
from simulations.scenarios import BuiltScenario, Scenario
from simulations.workloads import JobSpec

if TYPE_CHECKING:
    from scheduler.queues import QueueState


DEFAULT_WINDOW = 24 * 3600.0


@dataclass
class Rehearsal:
    """A built scenario plus the namespace labels its teams need (ClusterQueue selectors)."""

    built: BuiltScenario
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ from the queues


def _amount(resource: str, text: Any) -> int:
    from runtimes.k8s.quantity import Quantity

    return Quantity(str(text)).amount(resource) if not isinstance(text, Quantity) else text.amount(resource)


def _job(workload: Workload, team: str, submit: float, duration: float, name: str) -> JobSpec:
    pod_sets = workload.spec.pod_sets
    largest = max(pod_sets, key=lambda p: p.count) if pod_sets else None
    per_pod: dict[str, int] = {}
    annotations: dict[str, str] = {}
    if largest is not None:
        from runtimes.k8s.core import pod_requests

        per_pod = {r: q.amount(r) for r, q in pod_requests(largest.template.spec).items()}
        annotations = largest.template.metadata.annotations
    mode, level = None, None
    if PODSET_REQUIRED_TOPOLOGY in annotations:
        mode, level = "required", annotations[PODSET_REQUIRED_TOPOLOGY]
    elif PODSET_PREFERRED_TOPOLOGY in annotations:
        mode, level = "preferred", annotations[PODSET_PREFERRED_TOPOLOGY]
    return JobSpec(
        name=name,
        team=team,
        submit_time=submit,
        nodes=max(1, sum(p.count for p in pod_sets)),
        gpus_per_node=per_pod.get(GPU_RESOURCE, 0),
        duration=max(1.0, duration),
        priority_class=workload.priority_class_name,
        cpu_milli=per_pod.get("cpu", 0),
        memory_mib=per_pod.get("memory", 0) // (1 << 20),
        topology_mode=mode,
        topology_level=level,
    )


def rehearsal_from_queues(
    objects: Sequence[Resource],
    workloads: Sequence[Workload],
    namespaces: dict[str, dict[str, str]],
    *,
    now: float,
    default_duration: float = 3600.0,
    window: float = DEFAULT_WINDOW,
    name: str = "current-queues",
) -> Rehearsal:
    local_queues = {f"{o.metadata.namespace or 'default'}/{o.name}": o for o in objects if isinstance(o, LocalQueue)}
    cluster_queues = {o.name: o for o in objects if isinstance(o, ClusterQueue)}
    nodes = [o for o in objects if isinstance(o, Node)]
    kept: list[Resource] = [o for o in objects if not isinstance(o, LocalQueue | Node)]
    notes: list[str] = []
    jobs: list[tuple[int, float, JobSpec]] = []
    team_labels: dict[str, dict[str, str]] = {}
    priorities = {o.name: o.value for o in objects if isinstance(o, WorkloadPriorityClass)}
    for workload in workloads:
        if not workload.spec.active:
            continue
        namespace = workload.metadata.namespace or "default"
        lq = local_queues.get(f"{namespace}/{workload.spec.queue_name or ''}")
        if lq is None or lq.spec.cluster_queue not in cluster_queues:
            notes.append(f"{namespace}/{workload.name}: no LocalQueue/ClusterQueue, left out")
            continue
        team = lq.spec.cluster_queue
        team_labels.setdefault(team, dict(namespaces.get(namespace, {})))
        priority = priorities.get(workload.priority_class_name or "", workload.spec.priority or 0)
        jobs.extend(_entries(workload, team, priority, now=now, default_duration=default_duration, window=window))
    jobs.sort(key=lambda entry: (entry[0] == 2, entry[1] if entry[0] == 2 else 0.0, entry[0], entry[1]))
    ordered = [job for _, _, job in jobs]
    notes.insert(0, _taken(jobs, window))
    for team in sorted(team_labels):
        kept.append(
            LocalQueue.model_validate(
                {"metadata": {"name": LOCAL_QUEUE_NAME, "namespace": team}, "spec": {"clusterQueue": team}}
            )
        )
    built = _built(name, objects, kept, nodes, cluster_queues, ordered)
    return Rehearsal(built, dict(team_labels), notes)


def _entries(
    workload: Workload, team: str, priority: int, *, now: float, default_duration: float, window: float
) -> list[tuple[int, float, JobSpec]]:
    """(group, order, job): 0 admitted (what is left of its run), 1 pending, 2 its next submission
    replayed from the last ``window`` of arrivals. A finished Workload is only an arrival: it
    holds nothing now, but it arrived (on a cluster most of the recent arrivals have finished)."""
    from scheduler.engine import parse_timestamp

    namespace = workload.metadata.namespace or "default"
    duration = float(workload.spec.maximum_execution_time_seconds or default_duration)
    created = parse_timestamp(workload.metadata.creation_timestamp) or now
    job_name = f"{namespace}.{workload.name}"
    admitted = workload.status.admission is not None
    if admitted:
        reserved = workload.status.condition("QuotaReserved")
        started = parse_timestamp(reserved.last_transition_time if reserved else None) or now
        duration -= max(0.0, now - started)
    # pending ones in Kueue's queue order (priority, then creation): the simulator runs a
    # cycle after each arrival, so the order they arrive in is the order they are tried
    order = created if admitted else created - 1e12 * priority
    entries = []
    if not workload.status.is_true("Finished"):
        entries.append((0 if admitted else 1, order, _job(workload, team, 0.0, duration, job_name)))
    if window > 0 and now - window < created <= now:
        replay = created - now + window
        entries.append((2, replay, _job(workload, team, replay, default_duration, f"{job_name}.next")))
    return entries


def _taken(entries: Sequence[tuple[int, float, JobSpec]], window: float) -> str:
    """How much of the queues the rehearsal took, in one line (what a reader checks first)."""
    groups = [group for group, _, _ in entries]
    replayed = f"{groups.count(2)} arrivals of the last {window / 3600:g} h replayed" if window > 0 else "no arrivals"
    return (
        f"rehearsed {groups.count(0)} admitted workloads (their remaining run), {groups.count(1)} pending and "
        f"{replayed}"
    )


def _built(
    name: str,
    objects: Sequence[Resource],
    kept: list[Resource],
    nodes: list[Node],
    cluster_queues: dict[str, ClusterQueue],
    ordered: list[JobSpec],
) -> BuiltScenario:
    primary = GPU_RESOURCE if any(job.gpus_per_node for job in ordered) else "cpu"
    nominal = {cq_name: nominal_quota(cq, primary) for cq_name, cq in cluster_queues.items()}
    capacity = sum(_amount(primary, n.status.allocatable.get(primary, 0)) for n in nodes) if nodes else 0
    if primary == "cpu":
        capacity //= 1000
    capacity = capacity or sum(nominal.values()) or 1
    topology = next((o for o in objects if isinstance(o, Topology)), None)
    levels = tuple(topology.level_labels) if topology is not None else ()
    return BuiltScenario(
        Scenario(name=name, sample_seconds=300.0),
        kept,
        nodes,
        [n.to_dict() for n in nodes],
        levels,
        len(ordered),
        lambda _: iter(ordered),
        primary,
        capacity,
        nominal,
    )


def nominal_quota(cq: ClusterQueue, resource: str) -> int:
    total = 0
    for group in cq.spec.resource_groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                if quota.name == resource:
                    amount = quota.nominal_quota.amount(resource)
                    total += amount // 1000 if resource == "cpu" else amount
    return total


def rehearsal_from_state(state: QueueState, **options: Any) -> Rehearsal:
    return rehearsal_from_queues(state.objects, state.workloads, state.namespaces, now=state.now, **options)
