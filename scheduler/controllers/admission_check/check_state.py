"""What trainyard's topology check writes on a Workload, and how the placement is read back.

An admission-check controller answers in ``status.admissionChecks[]`` (Kueue's
``AdmissionCheckState``): ``Ready`` with ``podSetUpdates`` that Kueue merges into the job's pod
templates before it starts the job, ``Retry`` with ``requeueAfterSeconds`` (Kueue releases the
quota and requeues the workload after that long), or ``Rejected`` (Kueue deactivates it).

A Ready check's ``podSetUpdates`` carry, per pod set:

- the annotation ``trainyard.io/topology-assignment``: the pod set's placement as Kueue's own
  v1beta2 ``topologyAssignment`` (domains in rank order), which the pod ungater reads to pin each
  pod by rank, as it reads ``status.admission`` in standalone mode;
- a ``nodeSelector`` on the Topology levels of the one domain the pod set was placed in (none
  when it spans several): the pods cannot leave that domain even before they are ungated, and a
  re-placement after a node failure stays inside it;
- the label ``trainyard.io/managed``, so trainyard's Pod informers see the pods whoever renders
  the JobSet.

Kueue refuses changes to the ``podSetUpdates`` of a check that stays Ready. When a failed node's
pods are re-placed inside the domain, the new placement goes into the Workload's annotation
``trainyard.io/replaced-placement`` instead, stamped with a digest of the Ready placement it
replaces: a stamp that no longer matches (the workload was evicted and placed anew) is ignored.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.controllers.checked_placement import (
    PLACEMENT_ANNOTATION,
    checked_topology_assignments,
    compact_json,
    placement_digest,
    ready_placements,
)
from scheduler.controllers.conditions import rfc3339
from scheduler.controllers.constants import MANAGED_LABEL, MANAGED_VALUE
from scheduler.controllers.workload_status import topology_assignments
from scheduler.engine import Admission

MESSAGE_LIMIT = 32768  # AdmissionCheckState.message's MaxLength

PENDING, RETRY, REJECTED = "Pending", "Retry", "Rejected"  # and READY, where a placement is read back


def _domain_selector(pod_set: Any) -> dict[str, str]:
    """The Topology level labels of the one domain holding the pod set (empty when it spans several)."""
    depth = len(pod_set.domain)
    return {
        label: pod_set.domain[position]
        for label, position in zip(pod_set.topology_levels, pod_set.value_positions, strict=True)
        if position < depth
    }


def pod_set_updates(admission: Admission) -> list[dict[str, Any]]:
    """The ``podSetUpdates`` of a Ready check for ``admission``'s placements, by pod set name."""
    encoded = topology_assignments(admission)
    selectors: dict[str, dict[str, str]] = {}
    for placement in admission.placements.values():
        for pod_set in getattr(placement, "pod_sets", ()):
            selectors[pod_set.name] = _domain_selector(pod_set)
    updates = []
    for name in sorted(encoded):
        update: dict[str, Any] = {
            "name": name,
            "labels": {MANAGED_LABEL: MANAGED_VALUE},
            "annotations": {PLACEMENT_ANNOTATION: compact_json(encoded[name])},
        }
        if selectors.get(name):
            update["nodeSelector"] = selectors[name]
        updates.append(update)
    return updates


def check_state(workload: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for state in (workload.get("status") or {}).get("admissionChecks") or ():
        if state.get("name") == name:
            return state  # type: ignore[no-any-return]
    return None


def replaced_placement_annotation(workload: Mapping[str, Any], admission: Admission) -> str:
    """The annotation value for ``admission``'s re-placed pods, stamped with the Ready placement."""
    return compact_json(
        {"basis": placement_digest(ready_placements(workload)), "podSets": topology_assignments(admission)}
    )


def with_topology_assignments(workload: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``workload`` whose ``status.admission`` names the checked placement as
    topologyAssignments: how the engine restores a placed gang's nodes."""
    copied = copy.deepcopy(dict(workload))
    placed = checked_topology_assignments(workload)
    admission = (copied.get("status") or {}).get("admission") or {}
    for assignment in admission.get("podSetAssignments") or ():
        if assignment.get("name") in placed:
            assignment["topologyAssignment"] = placed[assignment["name"]]
    return copied


def retry_delay(state: Mapping[str, Any] | None, base: float, cap: float) -> int:
    """Seconds before Kueue requeues after a Retry: ``base`` doubling with each earlier retry."""
    retries = int((state or {}).get("retryCount") or 0)
    return int(min(cap, base * 2 ** min(retries, 30)))


def states_with(
    workload: Mapping[str, Any],
    names: Iterable[str],
    state: str,
    message: str,
    now: float,
    *,
    updates: list[dict[str, Any]] | None = None,
    requeue_after: int | None = None,
) -> list[dict[str, Any]] | None:
    """``status.admissionChecks`` with the checks ``names`` set to ``state``; None when unchanged.

    The list is written whole (a merge patch replaces lists): the other checks' states are kept
    as read, at the same resourceVersion.
    """
    current = copy.deepcopy(list((workload.get("status") or {}).get("admissionChecks") or []))
    wanted = set(names)
    changed = False
    for index, entry in enumerate(current):
        if entry.get("name") not in wanted:
            continue
        updated = {key: value for key, value in entry.items() if key not in ("podSetUpdates", "requeueAfterSeconds")}
        updated.update(state=state, message=message[:MESSAGE_LIMIT])
        if entry.get("state") != state:
            updated["lastTransitionTime"] = rfc3339(now)
        if updates:
            updated["podSetUpdates"] = updates
        if requeue_after is not None:
            updated["requeueAfterSeconds"] = requeue_after
        if updated != entry:
            current[index] = updated
            changed = True
    return current if changed else None
