"""The topology check's placement as a Workload carries it, read back by whoever pins the pods.

Beside Kueue, a Ready check of trainyard's carries each pod set's placement in its
``podSetUpdates`` as the annotation ``trainyard.io/topology-assignment`` (Kueue's v1beta2
``topologyAssignment``). After a node failure the pods re-placed inside the domain are written in
the Workload's annotation ``trainyard.io/replaced-placement``, stamped with a digest of the Ready
placement it replaces (Kueue refuses changes to a Ready check's ``podSetUpdates``). The topology
check writes both (``admission_check.check_state``); the launcher and the pod ungater read them
here, without importing the check's controller.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

PLACEMENT_ANNOTATION = "trainyard.io/topology-assignment"
REPLACED_PLACEMENT_ANNOTATION = "trainyard.io/replaced-placement"
READY = "Ready"  # an AdmissionCheckState whose podSetUpdates Kueue applies


def compact_json(document: Any) -> str:
    return json.dumps(document, separators=(",", ":"), sort_keys=True)


def ready_placements(workload: Mapping[str, Any]) -> dict[str, str]:
    """Pod set -> the placement annotation of a Ready check, as written."""
    found: dict[str, str] = {}
    for state in (workload.get("status") or {}).get("admissionChecks") or ():
        if state.get("state") != READY:
            continue
        for update in state.get("podSetUpdates") or ():
            value = (update.get("annotations") or {}).get(PLACEMENT_ANNOTATION)
            if value:
                found.setdefault(str(update.get("name")), str(value))
    return found


def placement_digest(placements: Mapping[str, str]) -> str:
    return hashlib.sha256(compact_json(dict(sorted(placements.items()))).encode()).hexdigest()[:16]


def checked_topology_assignments(workload: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Pod set -> its placement as a Kueue topologyAssignment: the Ready check's, or the
    re-placement after a node failure when it was made from that same Ready placement."""
    written = ready_placements(workload)
    if not written:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for name, value in written.items():
        try:
            found[name] = json.loads(value)
        except ValueError:
            continue  # not ours to mend: the ungater leaves such pods gated and says why
    raw = ((workload.get("metadata") or {}).get("annotations") or {}).get(REPLACED_PLACEMENT_ANNOTATION)
    if raw:
        try:
            replaced = json.loads(raw)
        except ValueError:
            replaced = None
        if isinstance(replaced, dict) and replaced.get("basis") == placement_digest(written):
            for name, assignment in (replaced.get("podSets") or {}).items():
                if name in found and isinstance(assignment, dict):
                    found[name] = assignment
    return found
