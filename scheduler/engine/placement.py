"""The engine's bridge to gang placement: one topology placer per TAS ResourceFlavor.

Quota is decided by the flavor assignment; for flavors with a ``topologyName`` the workload is
admitted only when every pod set assigned to that flavor also gets a gang placement on the
flavor's topology. Placers are built lazily from the Nodes the engine was given and rebuilt when
a Topology or ResourceFlavor changes; admitted placements are re-reserved after a rebuild.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from runtimes.k8s.core import Node
from scheduler.engine.restore_placements import restored_placements

if TYPE_CHECKING:
    from scheduler.api.kueue import Admission as AdmissionStatus
    from scheduler.engine.cluster import ClusterModel, ClusterQueueInfo
    from scheduler.engine.flavors import Assignment
    from scheduler.engine.workloads import Admission, PodSetInfo, WorkloadInfo
    from scheduler.topology import GangPlacement, GangRequest, PlacementFailure, PodSetRequest, TopologyPlacer


_REQUEST_CACHE_LIMIT = 4096
# per TAS flavor: (ids of the cached pod set requests, the gang request)
_Requests = dict[str, tuple[tuple[int, ...], "GangRequest"]]


@functools.cache
def _placement_failure() -> type[PlacementFailure]:
    """The failure type, imported on first use: the engine loads the placer only for TAS."""
    from scheduler.topology import PlacementFailure

    return PlacementFailure


class PlacementBook:
    def __init__(self, model: ClusterModel, policy: Any = None) -> None:  # a topology PlacementPolicy or None
        self.model = model
        self.policy = policy  # chooses nodes instead of the placers' own (EngineConfig.placement_policy)
        self._placers: dict[str, TopologyPlacer] = {}
        self._stale = True
        self._reserved: dict[int, tuple[str, GangPlacement]] = {}  # id(placement) -> (flavor, placement)
        # (id(template), pod set, count) -> (template, request): reading a template parses its
        # quantities and annotations; workloads copied from one template share the result. The
        # entry keeps the template alive, so its id cannot be reused while cached.
        self._request_cache: dict[tuple[int, str, int], tuple[object, PodSetRequest]] = {}
        # (flavor, ids of cached requests) -> placement on the empty flavor, until nodes change
        self._empty_outcomes: dict[tuple[str, tuple[int, ...]], GangPlacement | PlacementFailure] = {}
        # (flavor, ids of cached requests) -> (placer version, the version at which its capacity
        # last grew or None, why it failed): on a full cluster the heads of one shape fail one
        # after another while nothing frees a node. A gang of one pod set that found no room
        # finds none while capacity only shrinks (admissions elsewhere); a gang of several is
        # placed pod set after pod set, and there less room can change an earlier choice and so
        # make room for a later one: its failure holds only while nothing changes at all.
        self._failures: dict[tuple[str, tuple[int, ...]], tuple[int, int | None, PlacementFailure]] = {}
        # assignment shape -> (its pod sets, kept alive; ``_requests``' answer)
        self._plans: dict[tuple[tuple[object, ...], ...], tuple[list[PodSetInfo], _Requests]] = {}
        self._tas_flavors: frozenset[str] | None = None  # flavors with a topologyName

    # ------------------------------------------------------------------------------ lifecycle

    def invalidate(self) -> None:
        self._stale = True
        self._tas_flavors = None
        self._empty_outcomes.clear()
        self._plans.clear()  # which flavors need a placement may have changed

    def node_changed(self, node: Node) -> None:
        self._empty_outcomes.clear()
        if self._stale:
            return
        for placer in self._placers.values():
            placer.update_node(node)

    def node_removed(self, name: str) -> None:
        self._empty_outcomes.clear()
        if self._stale:
            return
        for placer in self._placers.values():
            placer.remove_node(name)

    def _placer(self, flavor_name: str) -> TopologyPlacer | None:
        if self._stale:
            self._rebuild()
        return self._placers.get(flavor_name)

    def _rebuild(self) -> None:
        from scheduler.topology import TopologyPlacer

        self._stale = False
        self._placers = {}
        for name, flavor in self.model.flavors.items():
            topology_name = flavor.spec.topology_name
            topology = self.model.topologies.get(topology_name) if topology_name else None
            if topology is not None:
                self._placers[name] = TopologyPlacer.build(topology, flavor, self.model.nodes.values(), self.policy)
        for flavor_name, placement in self._reserved.values():
            placer = self._placers.get(flavor_name)
            if placer is not None:
                _hold(placer, placement)

    def is_topology_flavor(self, flavor_name: str) -> bool:
        return flavor_name in self._topology_flavors()

    def _topology_flavors(self) -> frozenset[str]:
        if self._tas_flavors is None:
            flavors = self.model.flavors.items()
            self._tas_flavors = frozenset(name for name, flavor in flavors if flavor.spec.topology_name)
        return self._tas_flavors

    def needs_placement(self, assignment: Assignment) -> bool:
        tas = self._topology_flavors()
        return any(f in tas for choice in assignment.pod_sets for f in choice.flavors.values())

    # ------------------------------------------------------------------------------ placing

    def place(
        self,
        cq: ClusterQueueInfo,
        workload: WorkloadInfo,
        assignment: Assignment,
        *,
        simulate_empty: bool = False,
    ) -> tuple[dict[str, Any] | None, str | None]:
        """Gang placements per TAS flavor (empty when none is needed), or None and why not."""
        requests = self._requests(workload, assignment)
        if not requests:
            return {}, None
        failure = _placement_failure()
        placements: dict[str, Any] = {}
        for flavor_name, (key, request) in requests.items():
            placer = self._placer(flavor_name)
            if placer is None:
                return None, f"Topology of ResourceFlavor {flavor_name} is not known"
            if simulate_empty:
                # The empty cluster changes only with the nodes: every head that waits on quota
                # asks this again, so the answer is kept until a node, flavor or topology changes.
                outcome = self._empty_outcomes.get((flavor_name, key))
                if outcome is None:
                    outcome = placer.place(request, simulate_empty=True)
                    self._empty_outcomes[(flavor_name, key)] = outcome
            else:
                outcome = self._place_now(placer, flavor_name, key, request)
            if isinstance(outcome, failure):
                return None, f"no topology placement in flavor {flavor_name}: {outcome.reason}"
            placements[flavor_name] = outcome
        return placements, None

    def fits(
        self, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment
    ) -> dict[str, tuple[int, int]] | None:
        """Whether ``place`` would succeed now (``TopologyPlacer.fits``: decided the same way,
        without naming nodes or failures): None when not, else per TAS flavor the node
        positions outside of which less room cannot undo the fit. A remembered failure holds."""
        rooms: dict[str, tuple[int, int]] = {}
        for flavor_name, (key, request) in self._requests(workload, assignment).items():
            placer = self._placer(flavor_name)
            if placer is None:
                return None
            if self._remembered_failure(placer, flavor_name, key) is not None:
                return None
            room = placer.fits(request)
            if room is None:
                return None
            rooms[flavor_name] = room
        return rooms

    def _remembered_failure(
        self, placer: TopologyPlacer, flavor_name: str, key: tuple[int, ...]
    ) -> PlacementFailure | None:
        """The failure remembered for this gang while it still holds (see ``_failures``)."""
        failed = self._failures.get((flavor_name, key))
        if failed is not None and (failed[0] == placer.version or failed[1] == placer.grown):
            return failed[2]
        return None

    def _place_now(
        self, placer: TopologyPlacer, flavor_name: str, key: tuple[int, ...], request: GangRequest
    ) -> GangPlacement | PlacementFailure:
        """``placer.place``, except that a failure is remembered until the placer's capacity changes."""

        failed = self._remembered_failure(placer, flavor_name, key)
        if failed is not None:
            return failed
        version, grown = placer.versions()
        outcome = placer.place(request)
        if isinstance(outcome, _placement_failure()):
            self._failures[(flavor_name, key)] = (version, grown if len(request.pod_sets) == 1 else None, outcome)
        else:
            self._failures.pop((flavor_name, key), None)
        return outcome

    def replace_failed_node(self, flavor_name: str, placement: Any, node: str) -> GangPlacement | PlacementFailure:
        """A placement with only ``node``'s pods moved (in the same domain), or why not."""
        placer = self._placer(flavor_name)
        if placer is None:
            return _placement_failure()(f"Topology of ResourceFlavor {flavor_name} is not known", requeue=True)
        return placer.replace_failed_node(placement, node)

    def gang_fit(self, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment) -> VictimsGone:
        """The preemption search's placement check for ``workload`` (preemption.ExtraFit)."""
        if self._stale:
            self._rebuild()
        return VictimsGone(self, cq, workload, assignment)

    def _requests(self, workload: WorkloadInfo, assignment: Assignment) -> _Requests:
        """Per TAS flavor: (ids of the cached pod set requests, the GangRequest).

        Remembered per assignment shape: each pod set's PodSetInfo (shared by the workloads of
        one template, and kept alive by the entry so its id stays unique), count and flavors.
        """
        parts: list[tuple[object, ...]] = []
        for c in assignment.pod_sets:  # a loop, not a generator: compiled, it is the cheaper
            # tuple(values()), not *-unpacking: compiled, unpacking a dict view into a tuple goes
            # through a generic list extend
            parts.append((id(c.pod_set), c.count, tuple(c.flavors.values())))
        key = tuple(parts)
        plan = self._plans.get(key)
        if plan is not None:
            return plan[1]
        requests = self._build_requests(assignment) if self.needs_placement(assignment) else {}
        if len(self._plans) >= _REQUEST_CACHE_LIMIT:
            self._forget_requests()
        self._plans[key] = ([c.pod_set for c in assignment.pod_sets], requests)
        return requests

    def _build_requests(self, assignment: Assignment) -> _Requests:
        from scheduler.topology import GangRequest, pod_set_request_from_template

        by_flavor: dict[str, list[PodSetRequest]] = {}
        for choice in assignment.pod_sets:
            flavors = {f for f in choice.flavors.values() if self.is_topology_flavor(f)}
            if not flavors:
                continue
            template = choice.pod_set.template
            key = (id(template), choice.pod_set.name, choice.count)
            cached = self._request_cache.get(key)
            if cached is not None and cached[0] is template:
                request = cached[1]
            else:
                request = pod_set_request_from_template(choice.pod_set.name, choice.count, template)
                if len(self._request_cache) >= _REQUEST_CACHE_LIMIT:
                    self._forget_requests()
                self._request_cache[key] = (template, request)
            for flavor_name in sorted(flavors):
                by_flavor.setdefault(flavor_name, []).append(request)
        return {f: (tuple(map(id, pod_sets)), GangRequest.of(*pod_sets)) for f, pod_sets in by_flavor.items()}

    def _forget_requests(self) -> None:
        """Drop the cached requests and everything keyed by their ids."""
        self._request_cache.clear()
        self._plans.clear()
        self._empty_outcomes.clear()
        self._failures.clear()

    # ------------------------------------------------------------------------------ bookkeeping

    def reserve(self, admission: Admission) -> None:
        for flavor_name, placement in admission.placements.items():
            self._reserved[id(placement)] = (flavor_name, placement)
            placer = self._placers.get(flavor_name) if not self._stale else None
            if placer is not None:
                placer.reserve(placement)

    def release(self, admission: Admission) -> None:
        for flavor_name, placement in admission.placements.items():
            if self._reserved.pop(id(placement), None) is None:
                continue
            placer = self._placers.get(flavor_name) if not self._stale else None
            if placer is not None:
                placer.release(placement)

    def restore(self, info: WorkloadInfo, admission: AdmissionStatus) -> list[str]:
        """A workload admitted before the engine started: its pods already hold their nodes.

        The nodes come from ``status.admission``'s topologyAssignments (``scheduler.engine.
        restore``) and are reserved as the engine's own placements are, so finishing or evicting
        the workload frees them and ``node_failed`` can move its pods. Returns notes on pods that
        could not be restored (their node is gone, the assignment is unreadable...).
        """
        if info.admission is None:
            return []
        pod_sets = {p.name: p for p in info.pod_sets}
        placements, notes = restored_placements(
            admission, pod_sets, self._placer, self.is_topology_flavor, self.model.nodes
        )
        info.admission.placements = placements
        for flavor_name, placement in placements.items():
            self._reserved[id(placement)] = (flavor_name, placement)
            placer = self._placers.get(flavor_name) if not self._stale else None
            if placer is not None and not _hold(placer, placement):
                notes.append(f"its pods on flavor {flavor_name} overcommit their nodes; they keep them all the same")
        return notes


def _hold(placer: TopologyPlacer, placement: GangPlacement) -> bool:
    """Reserve ``placement``; one that would overcommit its nodes (a restored gang whose nodes
    shrank, or that shares them with another) is taken all the same, since its pods run there.
    False when it overcommits."""
    try:
        placer.reserve(placement)
    except ValueError:
        placer.shift_usage([placement], 1)
        return False
    return True


class VictimsGone:
    """Would a workload get its gang placement with the victims taken so far gone?

    A victim's reserved pods leave their placer when it is taken and come back when it is
    returned; the placers are brought up to date only when a check needs them, so a victim
    taken and returned in between costs nothing. After a fit, a returned victim whose pods are
    all outside the nodes that fit vouched for (``PlacementBook.fits``) cannot undo it: the
    search's fill-back gives most victims back without a check.
    """

    def __init__(self, book: PlacementBook, cq: ClusterQueueInfo, workload: WorkloadInfo, assignment: Assignment):
        self.book = book
        self.cq = cq
        self.workload = workload
        self.assignment = assignment
        self._out = 0  # victims taken out and not yet restored
        self._before: dict[str, tuple[int, int]] = {}  # flavor -> its placer's versions before the first
        # id(victim) -> (victim, +1 or -1): its move not yet made on the placers
        self._pending: dict[int, tuple[WorkloadInfo, int]] = {}
        self._rooms: dict[str, tuple[int, int]] | None = None  # the last fit's, while it holds

    def _note(self, victim: WorkloadInfo, sign: int) -> None:
        entry = self._pending.pop(id(victim), None)
        if entry is None:
            self._pending[id(victim)] = (victim, sign)
        # else the two moves cancel: the placers already hold what they should

    def _flush(self) -> None:
        """Make the pending moves on the placers, one update per placer and direction."""
        if not self._pending:
            return
        book = self.book
        moves: dict[tuple[str, int], list[GangPlacement]] = {}
        for victim, sign in self._pending.values():
            if victim.admission is None:
                continue
            for flavor_name, placement in victim.admission.placements.items():
                if id(placement) in book._reserved and flavor_name in book._placers:
                    moves.setdefault((flavor_name, sign), []).append(placement)
        self._pending.clear()
        for (flavor_name, sign), placements in moves.items():
            placer = book._placers[flavor_name]
            if flavor_name not in self._before:
                # no victim has moved on this placer yet in this search: its versions before it
                self._before[flavor_name] = placer.versions()
            placer.shift_usage(placements, sign)

    def remove(self, victim: WorkloadInfo) -> None:
        # more room never undoes a fit: the last one's rooms still vouch
        self._note(victim, -1)
        self._out += 1

    def restore(self, victim: WorkloadInfo) -> None:
        self._note(victim, 1)
        self._out -= 1
        if self._rooms is not None and self._occupies(victim, self._rooms):
            self._rooms = None
        if not self._out:
            # every victim is back: the placers hold exactly what they held before the search, so
            # they take their versions back and answers remembered then (failures) hold again
            self._flush()
            for flavor_name, versions in self._before.items():
                placer = self.book._placers.get(flavor_name)
                if placer is not None:
                    placer.restore_versions(versions)
            self._before.clear()
            self._rooms = None

    def _occupies(self, victim: WorkloadInfo, rooms: dict[str, tuple[int, int]]) -> bool:
        """Whether ``victim``'s pods take room inside what the last fit stood on."""
        if victim.admission is None:
            return False
        book = self.book
        for flavor_name, placement in victim.admission.placements.items():
            room = rooms.get(flavor_name)
            placer = book._placers.get(flavor_name)
            if (
                room is not None
                and placer is not None
                and id(placement) in book._reserved
                and placer.holds_any(placement, room[0], room[1])
            ):
                return True
        return False

    def fits(self) -> bool:
        if self._rooms is not None:
            return True
        self._flush()
        self._rooms = self.book.fits(self.cq, self.workload, self.assignment)
        return self._rooms is not None
