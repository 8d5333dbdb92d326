"""The only module that calls the admission engine: JobSpec in, compact decisions out.

The simulator owns no scheduling logic. It hands every arrival to ``scheduler.engine`` as a
Kueue Workload and reads back what the engine decided (admissions with their flavors, usage
and gang placement; preemptions; evictions). If the engine's API changes, this file changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import (
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    Workload,
)
from scheduler.engine import AdmissionEngine, EngineConfig, WaitForPodsReady, WorkloadState, waiting_reason
from simulations.cluster_spec import GPU_PRODUCT_LABEL, GPU_RESOURCE, LOCAL_QUEUE_NAME
from simulations.workloads import JobSpec

if TYPE_CHECKING:
    from scheduler.topology.policy import PlacementPolicy

POD_SET_NAME = "trainer"


@dataclass(slots=True, init=False)
class Admitted:
    key: str
    cluster_queue: str
    usage: dict[tuple[str, str], int]  # (flavor, resource) -> amount, as the engine charged it
    borrowed: dict[tuple[str, str], int]
    flavors: dict[str, str]  # resource -> flavor
    counts: dict[str, int]  # pod set -> admitted pods
    nodes: tuple[str, ...]  # node of every pod, all pod sets; empty without TAS
    level: str | None  # topology level whose one domain holds the gang (None: spans the top)
    placed: bool  # the engine returned a gang placement

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        key: str,
        cluster_queue: str,
        usage: dict[tuple[str, str], int],
        borrowed: dict[tuple[str, str], int],
        flavors: dict[str, str],
        counts: dict[str, int],
        nodes: tuple[str, ...],
        level: str | None,
        placed: bool,
    ) -> None:
        self.key = key
        self.cluster_queue = cluster_queue
        self.usage = usage
        self.borrowed = borrowed
        self.flavors = flavors
        self.counts = counts
        self.nodes = nodes
        self.level = level
        self.placed = placed


@dataclass(slots=True, init=False)
class Removed:
    """A workload the engine took away (preempted or evicted); it requeues it itself."""

    key: str
    reason: str
    preemptor: str | None
    requeue_at: float | None

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        key: str,
        reason: str,
        preemptor: str | None,
        requeue_at: float | None,
    ) -> None:
        self.key = key
        self.reason = reason
        self.preemptor = preemptor
        self.requeue_at = requeue_at


@dataclass(slots=True, init=False)
class Decisions:
    admitted: list[Admitted]
    preempted: list[Removed]
    evicted: list[Removed]

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        admitted: list[Admitted],
        preempted: list[Removed],
        evicted: list[Removed],
    ) -> None:
        self.admitted = admitted
        self.preempted = preempted
        self.evicted = evicted


def workload_document(job: JobSpec) -> dict[str, Any]:
    """The Kueue Workload a TrainJob of this shape would get (one pod set, ``nodes`` pods)."""
    requests: dict[str, str] = {"cpu": f"{job.cpu_milli}m", "memory": f"{job.memory_mib}Mi"}
    if job.gpus_per_node:
        requests[GPU_RESOURCE] = str(job.gpus_per_node)
    annotations: dict[str, str] = {}
    if job.topology_mode and job.topology_level:
        key = PODSET_REQUIRED_TOPOLOGY if job.topology_mode == "required" else PODSET_PREFERRED_TOPOLOGY
        annotations[key] = job.topology_level
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "trainer", "resources": {"requests": requests, "limits": dict(requests)}}],
    }
    if job.gpu_models:
        pod_spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": GPU_PRODUCT_LABEL, "operator": "In", "values": list(job.gpu_models)}
                            ]
                        }
                    ]
                }
            }
        }
    spec: dict[str, Any] = {
        "queueName": LOCAL_QUEUE_NAME,
        "podSets": [
            {
                "name": POD_SET_NAME,
                "count": job.nodes,
                "template": {"metadata": {"annotations": annotations}, "spec": pod_spec},
            }
        ],
    }
    if job.priority_class:
        spec["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": job.priority_class,
        }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": job.name, "namespace": job.team},
        "spec": spec,
    }


def renamed(template: Workload, name: str, namespace: str) -> Workload:
    """``template`` under another name and namespace, without validation: what
    ``model_copy(update=...)`` of it and of its metadata makes (shallow copies that share every
    other nested object; the engine reads workloads and never mutates them), built directly.
    pydantic's copy runs its own Python code on every call, about 7 µs a job; this is a third."""
    source_metadata = template.metadata
    metadata = source_metadata.__class__.__new__(source_metadata.__class__)
    metadata_fields = dict(source_metadata.__dict__)
    metadata_fields["name"] = name
    metadata_fields["namespace"] = namespace
    object.__setattr__(metadata, "__dict__", metadata_fields)
    object.__setattr__(metadata, "__pydantic_fields_set__", source_metadata.__pydantic_fields_set__ | _RENAMED)
    object.__setattr__(metadata, "__pydantic_extra__", _copied(source_metadata.__pydantic_extra__))
    object.__setattr__(metadata, "__pydantic_private__", _copied(source_metadata.__pydantic_private__))
    workload = template.__class__.__new__(template.__class__)
    fields = dict(template.__dict__)
    fields["metadata"] = metadata
    object.__setattr__(workload, "__dict__", fields)
    object.__setattr__(workload, "__pydantic_fields_set__", template.__pydantic_fields_set__ | _METADATA)
    object.__setattr__(workload, "__pydantic_extra__", _copied(template.__pydantic_extra__))
    object.__setattr__(workload, "__pydantic_private__", _copied(template.__pydantic_private__))
    return workload


_RENAMED = frozenset({"name", "namespace"})
_METADATA = frozenset({"metadata"})


def _copied(table: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if table is None else dict(table)


def workload_shape(job: JobSpec) -> tuple[Any, ...]:
    """What makes two jobs of one team the same Workload to the engine (its template cache's key)."""
    return (
        job.nodes,
        job.gpus_per_node,
        job.cpu_milli,
        job.memory_mib,
        job.topology_mode,
        job.topology_level,
        job.gpu_models,
        job.priority_class,
    )


class EngineDriver:
    """Wraps one ``AdmissionEngine`` for a simulation run."""

    def __init__(
        self,
        fair_sharing: bool = False,
        pods_ready_timeout: float | None = None,
        placement_policy: PlacementPolicy | None = None,
    ) -> None:
        wait = WaitForPodsReady(timeout_seconds=pods_ready_timeout) if pods_ready_timeout else None
        config = EngineConfig(fair_sharing=fair_sharing, wait_for_pods_ready=wait, placement_policy=placement_policy)
        self.engine = AdmissionEngine(config)
        # Workloads of the same shape share one validated spec; only the name differs. This
        # keeps pydantic validation out of the per-job path (measured in the benchmark).
        self._templates: dict[tuple[Any, ...], Workload] = {}

    def apply(self, obj: Resource) -> None:
        self.engine.apply(obj)

    def workload(self, job: JobSpec) -> Workload:
        shape = workload_shape(job)
        template = self._templates.get(shape)
        if template is None:
            template = Workload.model_validate(workload_document(job))
            self._templates[shape] = template
        return renamed(template, job.name, job.team)

    def submit(self, job: JobSpec, now: float) -> str:
        return self.engine.submit(self.workload(job), now)

    def schedule(self, now: float) -> Decisions:
        result = self.engine.schedule(now)
        admitted = []
        for decision in result.admitted:
            nodes: list[str] = []
            level: str | None = None
            placed = bool(decision.placement)
            for placement in decision.placement.values():
                for pod_set in placement.pod_sets:
                    nodes.extend(pod_set.nodes)
                    level = pod_set.level
            admitted.append(
                Admitted(
                    key=decision.key,
                    cluster_queue=decision.cluster_queue,
                    usage=dict(decision.usage),
                    borrowed=dict(decision.borrowed),
                    flavors=dict(decision.flavors),
                    counts=dict(decision.counts),
                    nodes=tuple(nodes),
                    level=level,
                    placed=placed,
                )
            )
        preempted = [Removed(p.key, p.reason, p.preemptor, None) for p in result.preempted]
        evicted = [Removed(e.key, e.reason, None, e.requeue_at) for e in result.evicted]
        return Decisions(admitted, preempted, evicted)

    def is_admitted(self, key: str) -> bool:
        """Whether the engine holds ``key`` admitted now (after a cycle that may have admitted,
        preempted and re-admitted it in several rounds: CycleResult lists do not keep order)."""
        info = self.engine.workload(key)
        return info is not None and info.state is WorkloadState.ADMITTED

    def pods_ready(self, key: str, now: float) -> None:
        self.engine.pods_ready(key, now)

    def finish(self, key: str, now: float) -> None:
        # the TrainJob is done and its Workload deleted: the engine drops it from its tables
        self.engine.forget(key, now)

    def evict(self, key: str, reason: str, now: float) -> Removed | None:
        evicted = self.engine.evict(key, reason, now)
        return None if evicted is None else Removed(evicted.key, evicted.reason, None, evicted.requeue_at)

    def update_node(self, node: Node) -> None:
        self.engine.apply(node)

    def next_timer(self) -> float | None:
        return self.engine.next_timer()

    def never_fits_reason(self, job: JobSpec) -> str | None:
        """Why the engine could never admit ``job``, even on an empty cluster; None if it could."""
        return self.engine.never_fits_reason(self.workload(job))

    def waiting_reason(self, key: str) -> str:
        """The engine's words for why ``key`` waits now (its last cycle's reason, an inactive
        ClusterQueue, or its place in the line)."""
        info = self.engine.workload(key)
        if info is None:
            return "the engine does not hold this workload"
        return waiting_reason(self.engine, info) or "waiting for its turn in the queue"
