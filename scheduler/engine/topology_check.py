"""trainyard as Kueue's topology admission check: gang placement for workloads whose quota Kueue reserved.

Beside Kueue (``trainyard serve --mode admission-check``) Kueue assigns quota and flavors and owns
the Workload; trainyard runs the AdmissionChecks whose ``controllerName`` is
``trainyard.io/topology``. The flavors such a check covers carry no ``topologyName`` in Kueue's
eyes (else Kueue's own TAS would place them first); the check's ``parameters`` name the
kueue.x-k8s.io Topology to place on, and a check without parameters places on hosts (with the
NVLink cliques nodes carry, as every trainyard topology does).

``TopologyCheck`` keeps one engine as the check sees the cluster: those flavors given the check's
Topology, so they are TAS flavors to the engine, and every workload that passed the check holding
its nodes. ``place`` asks the very placer the admission cycle asks (``PlacementBook.place``) for
the flavors Kueue assigned: placed now is ``Ready``, placed only on the empty flavor is ``Retry``
(Kueue releases the quota and requeues), not even there is ``Rejected`` (Kueue deactivates it).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Protocol

from runtimes.k8s.core import Node
from runtimes.k8s.meta import ObjectMeta, Resource
from scheduler.api.kueue import (
    KUEUE_GROUP,
    AdmissionCheck,
    ClusterQueue,
    ResourceFlavor,
    Topology,
    TopologyLevel,
    TopologySpec,
    Workload,
)
from scheduler.engine.admission_checks import checks_of
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.core import EngineCore
from scheduler.engine.feasibility import pod_larger_than_nodes
from scheduler.engine.flavors import Assignment, Mode, PodSetChoice
from scheduler.engine.node_failures import ReplacedPlacement
from scheduler.engine.results import EvictedWorkload
from scheduler.engine.workloads import Admission, WorkloadInfo, WorkloadState

TOPOLOGY_CHECK_CONTROLLER = "trainyard.io/topology"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# The Topology a check without parameters places on: hosts (NVLink cliques are added by the placer).
# Not a valid object name, so it can never shadow a Topology of the cluster.
HOSTS_TOPOLOGY = "trainyard.io/hosts"

READY, RETRY, REJECTED = "Ready", "Retry", "Rejected"


class CheckEngine(EngineCore, Protocol):
    """What the check needs of the engine facade (``AdmissionEngine``)."""

    def apply(self, obj: Resource) -> None: ...

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None: ...

    def submit(self, workload: Workload, now: float) -> str: ...

    def forget(self, key: str, now: float) -> None: ...

    def workload(self, key: str) -> WorkloadInfo | None: ...

    def cluster_queue(self, name: str) -> ClusterQueueInfo | None: ...

    def topologies(self) -> dict[str, Topology]: ...

    def node_failed(self, name: str, now: float) -> list[ReplacedPlacement | EvictedWorkload]: ...


@dataclass(frozen=True)
class CheckPlacement:
    """The check's answer for one workload: ``Ready`` with ``admission`` (its placements per TAS
    flavor, reserved in the engine), ``Retry`` or ``Rejected``, with a message a person acts on."""

    state: str
    message: str
    admission: Admission | None = None


def check_inactive_reason(check: AdmissionCheck, topologies: Container[str]) -> tuple[str, str] | None:
    """Why a topology check cannot place, as (reason, message): its parameters name something
    other than a Topology (BadParametersRef) or a Topology not in ``topologies``
    (TopologyNotFound). None when it is active."""
    parameters = check.spec.parameters
    if parameters is None:
        return None
    if parameters.api_group != KUEUE_GROUP or parameters.kind != "Topology":
        return "BadParametersRef", (
            f"spec.parameters names {parameters.api_group}/{parameters.kind} {parameters.name!r}; "
            f"name a {KUEUE_GROUP} Topology, or leave parameters out to place on hosts"
        )
    if parameters.name not in topologies:
        return "TopologyNotFound", f"Topology {parameters.name!r} named in spec.parameters does not exist; create it"
    return None


def hosts_topology() -> Topology:
    levels = [TopologyLevel(node_label=HOSTNAME_LABEL)]
    return Topology(metadata=ObjectMeta(name=HOSTS_TOPOLOGY), spec=TopologySpec(levels=levels))


class TopologyCheck:
    """The engine as the check's controller keeps it: objects in, placements out, and held."""

    def __init__(self, engine: CheckEngine, controller_name: str = TOPOLOGY_CHECK_CONTROLLER) -> None:
        self.engine = engine
        self.controller_name = controller_name
        self._flavors: dict[str, ResourceFlavor] = {}  # as Kueue holds them
        self._checks: dict[str, AdmissionCheck] = {}  # this controller's checks
        self._queues: dict[str, ClusterQueue] = {}
        # flavor -> (the object Kueue holds, the topologyName the engine was given with it)
        self._given: dict[str, tuple[ResourceFlavor, str | None]] = {}
        engine.apply(hosts_topology())

    # ---------------------------------------------------------------------------------- objects

    def apply(self, obj: Resource) -> None:
        """Take a ResourceFlavor, ClusterQueue, AdmissionCheck, Topology, Node (any engine kind)."""
        if isinstance(obj, AdmissionCheck):
            if obj.spec.controller_name == self.controller_name:
                self._checks[obj.name] = obj
            else:
                self._checks.pop(obj.name, None)
        elif isinstance(obj, ResourceFlavor):
            self._flavors[obj.name] = obj
        else:
            if isinstance(obj, ClusterQueue):
                self._queues[obj.name] = obj
            self.engine.apply(obj)
        if not isinstance(obj, Node):
            self._give_flavors()

    def delete(self, kind: str, name: str) -> None:
        if kind == "AdmissionCheck":
            self._checks.pop(name, None)
        elif kind == "ResourceFlavor":
            self._flavors.pop(name, None)
            self._given.pop(name, None)
            self.engine.delete(kind, name)
        else:
            if kind == "ClusterQueue":
                self._queues.pop(name, None)
            self.engine.delete(kind, name)
        if kind != "Node":
            self._give_flavors()

    def owns(self, check_name: str) -> bool:
        """Whether ``check_name`` is an AdmissionCheck of this controller."""
        return check_name in self._checks

    def inactive_reason(self, check: AdmissionCheck) -> tuple[str, str] | None:
        return check_inactive_reason(check, self.engine.topologies())

    def flavor_topologies(self) -> dict[str, str]:
        """Each flavor an active check of this controller covers, and the Topology it is placed on
        (a flavor with a topologyName of its own is Kueue's TAS's, and left to it)."""
        found: dict[str, str] = {}
        for _, queue in sorted(self._queues.items()):
            for check_name, flavors in sorted(checks_of(queue).items()):
                check = self._checks.get(check_name)
                if check is None or self.inactive_reason(check) is not None:
                    continue
                topology = check.spec.parameters.name if check.spec.parameters is not None else HOSTS_TOPOLOGY
                for flavor in sorted(flavors):
                    kueue_flavor = self._flavors.get(flavor)
                    if kueue_flavor is not None and not kueue_flavor.spec.topology_name:
                        found.setdefault(flavor, topology)
        return found

    def _give_flavors(self) -> None:
        """Give the engine each flavor as the check sees it (re-applied only when that changed)."""
        wanted = self.flavor_topologies()
        for name, flavor in self._flavors.items():
            topology = wanted.get(name)
            given = self._given.get(name)
            if given is not None and given[0] is flavor and given[1] == topology:
                continue
            view = flavor
            if topology is not None:
                view = flavor.model_copy(deep=True)
                view.spec.topology_name = topology
            self.engine.apply(view)
            self._given[name] = (flavor, topology)

    # --------------------------------------------------------------------------------- placing

    def place(self, workload: Workload, now: float) -> CheckPlacement:
        """Place a workload whose quota Kueue reserved (``status.admission``), and hold its nodes.

        A workload already placed with the same admission keeps its placement (a repeated
        reconcile, or a write to retry): the answer is the same nodes, never a second reservation.
        """
        key = f"{workload.metadata.namespace or 'default'}/{workload.metadata.name}"
        held = self.placed(key)
        if held is not None and workload.status.admission is not None and _same_quota(held, workload):
            return CheckPlacement(READY, _ready_message(held), held)
        self.engine.submit(workload, now)
        info = self.engine.workload(key)
        if info is None or info.admission is None or info.state is not WorkloadState.ADMITTED:
            self.engine.forget(key, now)
            return CheckPlacement(RETRY, "the workload has no quota reservation to place")
        cq = self.engine.cluster_queue(info.admission.cluster_queue)
        if cq is None:
            self.engine.forget(key, now)
            return CheckPlacement(RETRY, f"ClusterQueue {info.admission.cluster_queue} is not known yet")
        assignment = _assignment(cq, info, info.admission)
        book = self.engine.placements
        placements, why = book.place(cq, info, assignment)
        if placements is not None:
            info.admission.placements = placements
            book.reserve(info.admission)
            return CheckPlacement(READY, _ready_message(info.admission), info.admission)
        empty, _ = book.place(cq, info, assignment, simulate_empty=True)
        self.engine.forget(key, now)
        if empty is None:
            never = pod_larger_than_nodes(self.engine, assignment) or why or "no placement"
            return CheckPlacement(REJECTED, f"the gang can never be placed in the flavors Kueue assigned: {never}")
        return CheckPlacement(RETRY, f"the gang does not fit the free nodes now: {why}")

    def restore(self, workload: Workload, now: float) -> str:
        """A workload that passed the check before this engine started: ``status.admission``
        carries its placement as topologyAssignments, so its pods keep their nodes. Notes, if any."""
        key = self.engine.submit(workload, now)
        info = self.engine.workload(key)
        return info.reason if info is not None else ""

    def placed(self, key: str) -> Admission | None:
        """The admission the check placed (or restored) for ``key`` and holds the nodes of."""
        info = self.engine.workload(key)
        if info is None or info.state is not WorkloadState.ADMITTED or info.admission is None:
            return None
        return info.admission if info.admission.placements else None

    def release(self, key: str, now: float) -> None:
        """The workload was evicted, finished or deleted: its nodes are free again."""
        if self.engine.workload(key) is not None:
            self.engine.forget(key, now)

    def node_failed(self, name: str, now: float) -> list[ReplacedPlacement | EvictedWorkload]:
        """Gangs on a failed node: re-placed inside their domain, or released (``EvictedWorkload``:
        the check answers Retry and Kueue requeues the workload)."""
        outcomes = self.engine.node_failed(name, now)
        for outcome in outcomes:
            if isinstance(outcome, EvictedWorkload):
                self.release(outcome.key, now)
        return outcomes


def _assignment(cq: ClusterQueueInfo, info: WorkloadInfo, admission: Admission) -> Assignment:
    """Kueue's flavor assignment as the engine's own, for the placer."""
    by_name = {pod_set.name: pod_set for pod_set in info.pod_sets}
    choices = [
        PodSetChoice(by_name[ps.name], ps.count, dict(ps.flavors), dict(ps.usage), Mode.FIT, 0)
        for ps in admission.pod_sets
        if ps.name in by_name
    ]
    return Assignment(cq, choices, dict(admission.usage), Mode.FIT, 0, [])


def _same_quota(held: Admission, workload: Workload) -> bool:
    """Whether Kueue's reservation is the one the held placement was made for."""
    reserved = workload.status.admission
    if reserved is None or reserved.cluster_queue != held.cluster_queue:
        return False
    wanted: Mapping[str, tuple[int | None, dict[str, str]]] = {
        a.name: (a.count, dict(a.flavors)) for a in reserved.pod_set_assignments
    }
    have = {ps.name: (ps.count, ps.flavors) for ps in held.pod_sets}
    return wanted.keys() == have.keys() and all(
        wanted[name][1] == flavors and wanted[name][0] in (None, count) for name, (count, flavors) in have.items()
    )


def _ready_message(admission: Admission) -> str:
    parts = []
    for flavor, placement in sorted(admission.placements.items()):
        for pod_set in getattr(placement, "pod_sets", ()):
            nodes = sorted(set(pod_set.nodes))
            where = f"{pod_set.level} {'/'.join(pod_set.domain)}" if pod_set.level else "several domains"
            parts.append(f"{pod_set.name}: {pod_set.count} pods on {len(nodes)} nodes of {flavor} ({where})")
    return "placed by trainyard: " + "; ".join(parts) if parts else "no pod set needs a topology placement"
