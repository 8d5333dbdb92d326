"""The engine's compact view of a Workload, converted once at the boundary.

Hot loops (flavor assignment, preemption search, simulation) work on these slotted records with
integer amounts, never on pydantic models.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Any

from runtimes.k8s.core import NodeSelectorTerm, PodTemplateSpec, Toleration, pod_requests
from scheduler.api.kueue import PodSet, Workload
from scheduler.engine.quota import FlavorResource


class WorkloadState(enum.Enum):
    PENDING = "Pending"
    ADMITTED = "Admitted"
    FINISHED = "Finished"
    INADMISSIBLE = "Inadmissible"  # can never be admitted as things stand (no queue, inactive...)
    DEACTIVATED = "Deactivated"  # requeuing limit exceeded or spec.active false


@dataclass(slots=True)
class PodSetInfo:
    name: str
    count: int
    min_count: int | None
    requests: dict[str, int]  # per pod, engine amounts
    tolerations: tuple[Toleration, ...]
    node_selector: dict[str, str]
    required_affinity: tuple[NodeSelectorTerm, ...]
    template: PodTemplateSpec

    def total(self, count: int | None = None) -> dict[str, int]:
        n = self.count if count is None else count
        return {resource: amount * n for resource, amount in self.requests.items()}


@dataclass(slots=True, init=False)
class PodSetAssignment:
    name: str
    count: int
    flavors: dict[str, str]  # resource -> flavor
    usage: dict[FlavorResource, int]

    # mypyc: CONTRIBUTING.md
    def __init__(self, name: str, count: int, flavors: dict[str, str], usage: dict[FlavorResource, int]) -> None:
        self.name = name
        self.count = count
        self.flavors = flavors
        self.usage = usage


@dataclass(slots=True, init=False)
class Admission:
    cluster_queue: str
    pod_sets: list[PodSetAssignment]
    usage: dict[FlavorResource, int]
    placements: dict[str, Any]  # flavor -> GangPlacement (TAS flavors)
    borrowed: dict[FlavorResource, int]

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        cluster_queue: str,
        pod_sets: list[PodSetAssignment],
        usage: dict[FlavorResource, int],
        placements: dict[str, Any] | None = None,
        borrowed: dict[FlavorResource, int] | None = None,
    ) -> None:
        self.cluster_queue = cluster_queue
        self.pod_sets = pod_sets
        self.usage = usage
        self.placements = {} if placements is None else placements
        self.borrowed = {} if borrowed is None else borrowed

    @property
    def flavors(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for pod_set in self.pod_sets:
            merged.update(pod_set.flavors)
        return merged


@dataclass(eq=False, slots=True, init=False)
class WorkloadInfo:
    key: str
    namespace: str
    name: str
    uid: str
    local_queue: str
    priority: int
    created: float
    pod_sets: list[PodSetInfo]
    shape: str
    source: Workload | None
    active: bool
    cluster_queue: str | None
    state: WorkloadState
    admission: Admission | None
    admitted_at: float
    queue_order_time: float
    reason: str
    pods_ready: bool
    requeue_count: int
    requeue_at: float | None
    evictions: list[tuple[float, str, str]]  # (time, reason, message)
    sequence: int  # submit order, the last tie-break

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        key: str,
        namespace: str,
        name: str,
        uid: str,
        local_queue: str,
        priority: int,
        created: float,
        pod_sets: list[PodSetInfo],
        shape: str,
        source: Workload | None = None,
        active: bool = True,
        cluster_queue: str | None = None,
        state: WorkloadState = WorkloadState.PENDING,
        admission: Admission | None = None,
        admitted_at: float = 0.0,
        queue_order_time: float = 0.0,
        reason: str = "",
        pods_ready: bool = False,
        requeue_count: int = 0,
        requeue_at: float | None = None,
        evictions: list[tuple[float, str, str]] | None = None,
        sequence: int = 0,
    ) -> None:
        self.key = key
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.local_queue = local_queue
        self.priority = priority
        self.created = created
        self.pod_sets = pod_sets
        self.shape = shape
        self.source = source
        self.active = active
        self.cluster_queue = cluster_queue
        self.state = state
        self.admission = admission
        self.admitted_at = admitted_at
        self.queue_order_time = queue_order_time
        self.reason = reason
        self.pods_ready = pods_ready
        self.requeue_count = requeue_count
        self.requeue_at = requeue_at
        self.evictions = [] if evictions is None else evictions
        self.sequence = sequence

    def order_key(self) -> tuple[int, float, str]:
        """Queue order: higher priority first, then earlier timestamp, then UID."""
        return (-self.priority, self.queue_order_time, self.uid)


def _pod_set_info(pod_set: PodSet) -> PodSetInfo:
    spec = pod_set.template.spec
    requests = {name: quantity.amount(name) for name, quantity in pod_requests(spec).items()}
    requests["pods"] = 1
    affinity = spec.affinity
    terms: tuple[NodeSelectorTerm, ...] = ()
    if affinity and affinity.node_affinity:
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if required is not None:
            terms = tuple(required.node_selector_terms)
    return PodSetInfo(
        name=pod_set.name,
        count=pod_set.count,
        min_count=pod_set.min_count,
        requests=requests,
        tolerations=tuple(spec.tolerations or ()),
        node_selector=dict(spec.node_selector or {}),
        required_affinity=terms,
        template=pod_set.template,
    )


def shape_of(local_queue: str, namespace: str, priority: int, pod_sets: list[PodSetInfo]) -> str:
    """Scheduling-equivalence hash: workloads of one shape get the same answer from a cycle.

    Like Kueue's SchedulingEquivalenceHashing, a NoFit for one parks all of its shape until
    capacity changes, so a deep queue of identical jobs costs one attempt, not one per job.
    """
    parts: list[str] = [namespace, local_queue, str(priority)]
    for pod_set in pod_sets:
        parts.append(pod_set.name)
        parts.append(str(pod_set.count))
        parts.append(str(pod_set.min_count))
        parts.append(repr(sorted(pod_set.requests.items())))
        parts.append(repr(sorted(pod_set.node_selector.items())))
        parts.append(repr([t.to_dict() for t in pod_set.tolerations]))
        parts.append(repr([t.to_dict() for t in pod_set.required_affinity]))
        parts.append(repr(sorted(pod_set.template.metadata.annotations.items())))
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=12).hexdigest()


class PodSetInfoCache:
    """Converted pod sets by object identity, so copies of one Workload template convert once.

    Reading requests parses every Quantity (exact fractions), which dominated a simulation's
    per-job cost. Workloads that share pod set objects (the simulator's template copies, a
    controller resubmitting the object it holds) reuse the conversion. Each entry keeps its
    PodSet alive, so an id is never reused while cached; callers must not mutate a submitted
    Workload's pod sets in place (the engine treats submitted objects as read-only).
    """

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._pod_sets: dict[int, tuple[PodSet, PodSetInfo]] = {}
        self._shapes: dict[tuple[object, ...], str] = {}

    def pod_set_info(self, pod_set: PodSet) -> PodSetInfo:
        cached = self._pod_sets.get(id(pod_set))
        if cached is not None and cached[0] is pod_set:
            return cached[1]
        if len(self._pod_sets) >= self.limit:
            self._pod_sets.clear()
            self._shapes.clear()
        info = _pod_set_info(pod_set)
        self._pod_sets[id(pod_set)] = (pod_set, info)
        return info

    def shape_of(self, local_queue: str, namespace: str, priority: int, pod_sets: list[PodSetInfo]) -> str:
        # PodSetInfo objects are shared through this cache, so their identity names their content
        key = (local_queue, namespace, priority, *map(id, pod_sets))
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = shape_of(local_queue, namespace, priority, pod_sets)
        return shape


def workload_info(
    workload: Workload,
    *,
    priority: int,
    created: float,
    sequence: int,
    cache: PodSetInfoCache | None = None,
) -> WorkloadInfo:
    namespace = workload.metadata.namespace or "default"
    local_queue = workload.spec.queue_name or ""
    if cache is None:
        pod_sets = [_pod_set_info(pod_set) for pod_set in workload.spec.pod_sets]
        shape = shape_of(local_queue, namespace, priority, pod_sets)
    else:
        pod_sets = [cache.pod_set_info(pod_set) for pod_set in workload.spec.pod_sets]
        shape = cache.shape_of(local_queue, namespace, priority, pod_sets)
    return WorkloadInfo(
        key=f"{namespace}/{workload.metadata.name}",
        namespace=namespace,
        name=workload.metadata.name,
        uid=workload.metadata.uid or f"{namespace}/{workload.metadata.name}",
        local_queue=local_queue,
        priority=priority,
        created=created,
        queue_order_time=created,
        pod_sets=pod_sets,
        shape=shape,
        source=workload,
        active=workload.spec.active,
        sequence=sequence,
    )
