"""The admission engine: Kueue objects and Workloads in, admission decisions out.

Pure and deterministic: no I/O, and no clock but the ``now`` each call passes in (seconds, any
epoch). The same engine runs behind the webhook, the controllers, the simulator and the CLI.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Topology, Workload
from scheduler.engine.admission_checks import AdmissionCheckRegistry
from scheduler.engine.cluster import ClusterModel, ClusterQueueInfo
from scheduler.engine.config import EngineConfig
from scheduler.engine.core import parse_timestamp as parse_timestamp  # re-exported: callers import it from here
from scheduler.engine.cycle import AdmissionCycle
from scheduler.engine.node_failures import ReplacedPlacement, handle_node_failure
from scheduler.engine.placement import PlacementBook
from scheduler.engine.quota import QuotaNode
from scheduler.engine.restore import restore_admission, restore_backoff
from scheduler.engine.results import CycleResult, EvictedWorkload
from scheduler.engine.workloads import (
    Admission,
    PodSetInfoCache,
    WorkloadInfo,
    WorkloadState,
    workload_info,
)


class AdmissionEngine:
    """Kueue-compatible admission over ClusterQueues, Cohorts and gang placement."""

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.model = ClusterModel()
        self.workloads: dict[str, WorkloadInfo] = {}
        self.placements = PlacementBook(self.model, self.config.placement_policy)
        self._sequence = itertools.count()
        self._timers: list[tuple[float, int, str, str]] = []  # (when, seq, kind, key)
        self._unrouted: dict[str, WorkloadInfo] = {}  # waiting for their LocalQueue/ClusterQueue
        self._pod_set_infos = PodSetInfoCache()
        self._dirty = False
        # flavor -> the ClusterQueues whose resource groups name it (until the model is rebuilt)
        self._flavor_users: dict[str, list[ClusterQueueInfo]] = {}

    # ------------------------------------------------------------------------------ objects

    def apply(self, obj: Resource) -> None:
        """Add or replace a queue object or Node."""
        if not self.model.store(obj):
            raise TypeError(f"the engine does not take {type(obj).__name__} objects")
        if isinstance(obj, Node):
            self.placements.node_changed(obj)
        elif isinstance(obj, ResourceFlavor | Topology):
            self.placements.invalidate()
        self._dirty = True

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.model.remove(kind, name, namespace)
        if kind == "Node":
            self.placements.node_removed(name)
        elif kind in ("ResourceFlavor", "Topology"):
            self.placements.invalidate()
        self._dirty = True

    def set_namespace(self, name: str, labels: dict[str, str]) -> None:
        self.model.namespaces[name] = dict(labels)
        self._dirty = True

    def remove_namespace(self, name: str) -> None:
        """The Namespace was deleted (its workloads go with it, so nothing parked is retried)."""
        self.model.namespaces.pop(name, None)

    def _refresh(self) -> None:
        """Recompile the quota tree after object changes and give every waiting workload a new try."""
        if not self._dirty:
            return
        self._dirty = False
        self.model.rebuild(self.model.cluster_queues)
        self._flavor_users.clear()
        for info in self.model.cluster_queues.values():
            info.queue.unpark_all()
        for workload in list(self._unrouted.values()):
            self._route(workload)

    # ------------------------------------------------------------------------------ workloads

    def priority_of(self, workload: Workload) -> int:
        name = workload.priority_class_name
        if name is not None:
            wpc = self.model.priority_classes.get(name)
            if wpc is not None:
                return wpc.value
        return workload.spec.priority or 0

    def submit(self, workload: Workload, now: float) -> str:
        """Queue a workload; one that carries ``status.admission`` is taken as admitted."""
        self._refresh()
        created = parse_timestamp(workload.metadata.creation_timestamp)
        info = workload_info(
            workload,
            priority=self.priority_of(workload),
            created=now if created is None else created,
            sequence=next(self._sequence),
            cache=self._pod_set_infos,
        )
        previous = self.workloads.get(info.key)
        if previous is not None and previous.state is WorkloadState.ADMITTED:
            self._release(previous)
        self.workloads[info.key] = info
        status = workload.status
        if status.is_true("Finished"):
            info.state = WorkloadState.FINISHED
            info.reason = "finished"
        elif not info.active:
            info.state = WorkloadState.DEACTIVATED
            info.reason = "spec.active is false"
        elif status.admission is not None:
            restore_admission(self, info, workload, now)
            self._arm_pods_ready_timer(info)
        elif not restore_backoff(self, info, workload, now):
            self._route(info)
        return info.key

    def _route(self, workload: WorkloadInfo) -> None:
        """Put a pending workload in its ClusterQueue's queue, or hold it until that exists."""
        lq = self.model.local_queues.get(f"{workload.namespace}/{workload.local_queue}")
        if not workload.local_queue:
            workload.reason = "the workload names no LocalQueue (spec.queueName)"
        elif lq is None:
            workload.reason = f"LocalQueue {workload.local_queue} doesn't exist in namespace {workload.namespace}"
        elif lq.spec.cluster_queue not in self.model.cluster_queues:
            workload.reason = f"ClusterQueue {lq.spec.cluster_queue} doesn't exist"
        else:
            self._unrouted.pop(workload.key, None)
            workload.cluster_queue = lq.spec.cluster_queue
            workload.state = WorkloadState.PENDING
            self.model.cluster_queues[lq.spec.cluster_queue].queue.push(workload)
            return
        workload.state = WorkloadState.INADMISSIBLE
        workload.cluster_queue = lq.spec.cluster_queue if lq is not None else None
        self._unrouted[workload.key] = workload

    def pods_ready(self, key: str, now: float) -> None:
        workload = self.workloads.get(key)
        if workload is not None:
            workload.pods_ready = True

    def finish(self, key: str, now: float) -> None:
        """The workload finished or was deleted: release what it holds."""
        workload = self.workloads.get(key)
        if workload is None:
            return
        if workload.state is WorkloadState.ADMITTED:
            self._release(workload)
        self._unrouted.pop(key, None)
        workload.state = WorkloadState.FINISHED
        workload.reason = "finished"

    def forget(self, key: str, now: float) -> None:
        """The Workload object was deleted: finish it and drop it from every table.

        ``finish`` keeps the record so reports can show it as Finished; a long simulation
        forgets each job as it completes so the engine's tables hold only live workloads.
        Queue heaps and timers drop their stale entries lazily (they check the state).
        """
        self.finish(key, now)
        self.workloads.pop(key, None)

    def evict(self, key: str, reason: str, now: float, *, message: str = "") -> EvictedWorkload | None:
        """Evict an admitted workload (node failure, stop policy...) and requeue it with backoff."""
        workload = self.workloads.get(key)
        if workload is None or workload.state is not WorkloadState.ADMITTED:
            return None
        return self._evict_with_backoff(workload, reason, message or reason, now)

    # ------------------------------------------------------------------------------ the cycle

    def schedule(self, now: float) -> CycleResult:
        """Run admission until nothing more can be admitted (one round when configured as Kueue)."""
        self._refresh()
        result = CycleResult()
        self._fire_timers(now, result)
        cycle = AdmissionCycle(self, now, result)
        limit = 4 * (len(self.workloads) + 4)  # a guard against any preemption ping-pong
        while cycle.run_round() and result.rounds < limit:
            if not self.config.multiple_admissions_per_cycle:
                break
        return result

    def next_timer(self) -> float | None:
        """The earliest time a timeout or backoff expiry wants ``schedule`` to run again."""
        while self._timers:
            when, _, kind, key = self._timers[0]
            if self._timer_live(kind, key, when):
                return when
            heapq.heappop(self._timers)
        return None

    # ------------------------------------------------------------------------------ helpers

    def cluster_queue_of(self, workload: WorkloadInfo) -> ClusterQueueInfo | None:
        return self.model.cluster_queues.get(workload.cluster_queue or "")

    def unpark_cohort(self, cq: ClusterQueueInfo) -> None:
        """Capacity changed under ``cq``'s cohort tree: parked workloads there may fit now."""
        for leaf in cq.node.root().leaves():
            info = self.model.cluster_queues.get(leaf.name)
            if info is not None:
                info.queue.unpark_all()

    def unpark_topology_users(self, flavors: Iterable[str]) -> None:
        """Nodes of these TAS flavors freed up: a gang parked on a placement failure may fit now,
        in any cohort tree, since ClusterQueues of different trees can share a flavor's nodes."""
        for flavor in flavors:
            users = self._flavor_users.get(flavor)
            if users is None:
                queues = self.model.cluster_queues.values()
                users = [info for info in queues if any(flavor in group.flavors for group in info.groups)]
                self._flavor_users[flavor] = users
            for info in users:
                info.queue.unpark_all()

    def admit(self, workload: WorkloadInfo, cq: ClusterQueueInfo, admission: Admission, now: float) -> None:
        for fr, amount in admission.usage.items():
            cq.node.add_usage(fr, amount)
        admission.borrowed = {fr: cq.node.borrowed(fr) for fr in admission.usage if cq.node.borrowed(fr)}
        workload.admission = admission
        workload.state = WorkloadState.ADMITTED
        workload.admitted_at = now
        workload.pods_ready = False
        workload.reason = ""
        cq.admitted.add(workload)
        self.placements.reserve(admission)
        self._arm_pods_ready_timer(workload)

    def _release(self, workload: WorkloadInfo) -> None:
        cq = self.cluster_queue_of(workload)
        if workload.admission is not None:
            self.placements.release(workload.admission)
            if workload.admission.placements:
                self.unpark_topology_users(workload.admission.placements)
            if cq is not None:
                for fr, amount in workload.admission.usage.items():
                    cq.node.remove_usage(fr, amount)
        if cq is not None:
            cq.admitted.discard(workload.key)
            self.unpark_cohort(cq)
        workload.admission = None

    def requeue(self, workload: WorkloadInfo, reason: str, message: str, now: float) -> None:
        """Evicted now, back in its queue at once (preemption keeps the creation order)."""
        self._release(workload)
        workload.evictions.append((now, reason, message))
        workload.state = WorkloadState.PENDING
        workload.reason = message
        self._route(workload)

    def _evict_with_backoff(self, workload: WorkloadInfo, reason: str, message: str, now: float) -> EvictedWorkload:
        self._release(workload)
        workload.evictions.append((now, reason, message))
        workload.requeue_count += 1
        wait = self.config.wait_for_pods_ready
        strategy = wait.requeuing if wait is not None else None
        limit = strategy.backoff_limit_count if strategy is not None else None
        if limit is not None and workload.requeue_count > limit:
            workload.state = WorkloadState.DEACTIVATED
            workload.reason = f"{message}; deactivated: requeuing limit exceeded (RequeuingLimitExceeded)"
            return EvictedWorkload(workload.key, reason, workload.reason, None)
        delay = strategy.backoff(workload.requeue_count) if strategy is not None else 0.0
        if strategy is None or strategy.timestamp == "Eviction":
            workload.queue_order_time = now
        self.hold_until(workload, now + delay, f"{message}; requeued after a backoff of {delay:g}s")
        return EvictedWorkload(workload.key, reason, message, workload.requeue_at)

    def hold_until(self, workload: WorkloadInfo, when: float, reason: str) -> None:
        """Pending but out of every queue until ``when`` (a requeue backoff), then routed."""
        workload.requeue_at = when
        workload.state = WorkloadState.PENDING
        workload.cluster_queue = None
        workload.reason = reason
        heapq.heappush(self._timers, (when, next(self._sequence), "requeue", workload.key))

    def _arm_pods_ready_timer(self, workload: WorkloadInfo) -> None:
        wait = self.config.wait_for_pods_ready
        if wait is not None and not workload.pods_ready:
            deadline = workload.admitted_at + wait.timeout_seconds
            heapq.heappush(self._timers, (deadline, next(self._sequence), "pods-ready", workload.key))

    def _timer_live(self, kind: str, key: str, when: float) -> bool:
        workload = self.workloads.get(key)
        if workload is None:
            return False
        wait = self.config.wait_for_pods_ready
        if kind == "pods-ready":
            return (
                wait is not None
                and workload.state is WorkloadState.ADMITTED
                and not workload.pods_ready
                and workload.admitted_at + wait.timeout_seconds == when
            )
        return workload.state is WorkloadState.PENDING and workload.requeue_at == when

    def _fire_timers(self, now: float, result: CycleResult) -> None:
        while self._timers and self._timers[0][0] <= now:
            when, _, kind, key = heapq.heappop(self._timers)
            if not self._timer_live(kind, key, when):
                continue
            workload = self.workloads[key]
            if kind == "pods-ready":
                wait = self.config.wait_for_pods_ready
                assert wait is not None
                message = f"PodsReady condition not met within {wait.timeout_seconds:g}s of admission"
                result.evicted.append(self._evict_with_backoff(workload, "PodsReadyTimeout", message, now))
            else:
                workload.requeue_at = None
                self._route(workload)

    # ------------------------------------------------------------------------------ queries

    # What other packages read of the engine's state (its own parts read it through EngineCore).

    def workload(self, key: str) -> WorkloadInfo | None:
        """The engine's record of Workload ``namespace/name`` (a finished one until forgotten)."""
        return self.workloads.get(key)

    def all_workloads(self) -> list[WorkloadInfo]:
        """Every workload the engine holds, in the order it first saw them."""
        return list(self.workloads.values())

    def cluster_queue(self, name: str) -> ClusterQueueInfo | None:
        """A ClusterQueue as compiled: its quota node, queue of pending workloads and admitted ones."""
        return self.model.cluster_queues.get(name)

    def cluster_queues(self) -> dict[str, ClusterQueueInfo]:
        return dict(self.model.cluster_queues)

    def pending_in_order(self, cluster_queue: str) -> list[WorkloadInfo]:
        """A ClusterQueue's pending workloads in admission order (empty for an unknown queue)."""
        info = self.model.cluster_queues.get(cluster_queue)
        return info.queue.pending() if info is not None else []

    def cluster_queue_objects(self) -> dict[str, ClusterQueue]:
        """The ClusterQueue objects as applied, by name."""
        return dict(self.model.cluster_queue_objects)

    def cohorts(self) -> dict[str, QuotaNode]:
        """The cohorts of the compiled quota tree, named by a ClusterQueue or a Cohort object."""
        return dict(self.model.cohorts)

    def cohort_object(self, name: str) -> Cohort | None:
        return self.model.cohort_objects.get(name)

    def local_queue(self, namespace: str, name: str) -> LocalQueue | None:
        return self.model.local_queues.get(f"{namespace}/{name}")

    def local_queue_names(self, namespace: str) -> list[str]:
        prefix = f"{namespace}/"
        return sorted(key.removeprefix(prefix) for key in self.model.local_queues if key.startswith(prefix))

    def nodes(self) -> dict[str, Node]:
        return dict(self.model.nodes)

    def flavors(self) -> dict[str, ResourceFlavor]:
        return dict(self.model.flavors)

    def topologies(self) -> dict[str, Topology]:
        return dict(self.model.topologies)

    def admission_checks(self) -> AdmissionCheckRegistry:
        """The AdmissionChecks applied, with their parameters and whether each is active."""
        return self.model.admission_checks

    # ------------------------------------------------------------------------------ feasibility

    def never_fits_reason(self, workload: Workload) -> str | None:
        """Why ``workload`` could never be admitted, even on an empty cluster; None if it could
        (``scheduler.engine.feasibility``)."""
        from scheduler.engine.feasibility import never_fits_reason

        self._refresh()
        return never_fits_reason(self, workload)

    def node_failed(self, name: str, now: float) -> list[ReplacedPlacement | EvictedWorkload]:
        """Node ``name`` failed: admitted gangs on it are re-placed or evicted (``node_failures``)."""
        self._refresh()
        return handle_node_failure(self, name, now)
