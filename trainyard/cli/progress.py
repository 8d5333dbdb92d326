"""A TrainJob's and its Workload's progress as the API server shows it, in words.

The phase each object's conditions suggest (as ``kubectl get`` would) and where a Workload's pods
were placed (``status.admission``'s topologyAssignment). Nothing here decides anything: every
phase is read from the conditions the controllers wrote. Shared by ``run --kubeconfig``, which
follows one job, and ``cluster-demo``, which watches many.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.topology_assignment import TopologyAssignmentError, decode_topology_assignment
from scheduler.controllers.conditions import find_condition


def condition(document: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return find_condition((document.get("status") or {}).get("conditions"), kind)


def condition_is_true(document: Mapping[str, Any], kind: str) -> bool:
    found = condition(document, kind)
    return found is not None and found.get("status") == "True"


def workload_phase(workload: Mapping[str, Any]) -> str:
    """The phase `kubectl get workloads` would suggest, from Kueue's conditions."""
    if condition_is_true(workload, "Finished"):
        reason = (condition(workload, "Finished") or {}).get("reason", "")
        return f"Finished ({reason})" if reason else "Finished"
    if condition_is_true(workload, "Evicted"):
        if condition_is_true(workload, "Preempted"):
            return "Preempted"
        return f"Evicted ({(condition(workload, 'Evicted') or {}).get('reason', '')})"
    if condition_is_true(workload, "Admitted"):
        return "Admitted"
    if condition_is_true(workload, "QuotaReserved"):
        return "QuotaReserved"
    if condition(workload, "QuotaReserved") is not None:
        return "Pending"
    return "Created"


def trainjob_phase(trainjob: Mapping[str, Any]) -> str:
    for kind in ("Complete", "Failed"):
        if condition_is_true(trainjob, kind):
            return kind
    if condition_is_true(trainjob, "Suspended") or (trainjob.get("spec") or {}).get("suspend"):
        return "Suspended"
    return "Running"


def placement(workload: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The admitted flavor(s) and the node of each pod by rank, from ``status.admission``."""
    admission = (workload.get("status") or {}).get("admission") or {}
    flavors: set[str] = set()
    nodes: list[str] = []
    for assignment in admission.get("podSetAssignments") or []:
        flavors.update(str(f) for f in (assignment.get("flavors") or {}).values())
        encoded = assignment.get("topologyAssignment")
        if encoded:
            try:
                nodes.extend(decode_topology_assignment(encoded).pod_nodes())
            except TopologyAssignmentError as error:
                nodes.append(f"<unreadable topologyAssignment: {error}>")
    return ", ".join(sorted(flavors)) or "-", nodes


def nodes_in_words(nodes: Sequence[str]) -> str:
    """Each node once, in the order the pods' ranks meet it, with its pod count where several
    pods share it: ``gpu-0 (2 pods), gpu-1``; "-" for none."""
    counts = Counter(nodes)
    return ", ".join(f"{node} ({counts[node]} pods)" if counts[node] > 1 else node for node in counts) or "-"
