"""Server-side printing: ``meta.k8s.io/v1`` Tables, which give ``kubectl get`` its columns.

kubectl asks for a Table (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``); the
columns are the real server's for Pods, Nodes, Namespaces and Jobs, and for custom resources the
``additionalPrinterColumns`` of the CRDs trainyard ships (manifests/crds), evaluated with the
small JSONPath subset those columns use (``.a.b``, ``[N]``, ``[-1:]``, ``[?(@.k=="v")]``).
Rows carry the object's metadata (``includeObject=Metadata``, the default) so kubectl can add
``NAMESPACE`` and labels columns itself.
"""

from __future__ import annotations

import contextlib
import datetime
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from .crds import crd_versions
from .kinds import ResourceType

Column = tuple[str, str, int, Callable[[dict[str, Any]], Any]]  # name, type, priority, cell

_FILTER = re.compile(r'^\?\(@\.([A-Za-z0-9_]+)\s*==\s*"([^"]*)"\)$')


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _age(obj: dict[str, Any]) -> str:
    return _since((obj.get("metadata") or {}).get("creationTimestamp"))


def _last_seen(event: dict[str, Any]) -> str:
    series = event.get("series") or {}
    return _since(
        series.get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )


def _event_object(event: dict[str, Any]) -> str:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _since(created: Any) -> str:
    if not created:
        return "<unknown>"
    try:
        then = datetime.datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    seconds = max(0, int((datetime.datetime.now(datetime.UTC) - then).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 600:
        return f"{seconds // 60}m{seconds % 60}s" if seconds % 60 else f"{seconds // 60}m"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def jsonpath(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` selects in ``obj`` (the subset CRD printer columns use)."""
    values = [obj]
    for step in re.findall(r"\.([A-Za-z0-9_\-]+)|\[([^\]]*)\]", path):
        key, bracket = step
        found: list[Any] = []
        for value in values:
            if key:
                if isinstance(value, dict) and key in value:
                    found.append(value[key])
                continue
            if not isinstance(value, list):
                continue
            match = _FILTER.match(bracket)
            if match:
                found.extend(v for v in value if isinstance(v, dict) and str(v.get(match[1])) == match[2])
            elif bracket in ("*", ""):
                found.extend(value)
            elif ":" in bracket:
                start, _, end = bracket.partition(":")
                found.extend(value[int(start) if start else None : int(end) if end else None])
            else:
                with contextlib.suppress(ValueError, IndexError):
                    found.append(value[int(bracket)])
        values = found
    return values


def _path_cell(path: str) -> Callable[[dict[str, Any]], Any]:
    def cell(obj: dict[str, Any]) -> Any:
        values = jsonpath(obj, path)
        if not values:
            return None
        if len(values) == 1:
            value = values[0]
            return value if isinstance(value, int | float | str) else str(value).lower()
        return ",".join(str(v) for v in values)

    return cell


def _pod_status(pod: dict[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status") or {}
    if (pod.get("spec") or {}).get("schedulingGates"):
        return "SchedulingGated"
    reason = str(status.get("reason") or status.get("phase") or "Pending")
    # as kubectl prints it: a terminated container's reason (Completed, Error) names the pod's state
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated is not None:
            reason = str(terminated.get("reason") or f"ExitCode:{terminated.get('exitCode', 0)}")
    return reason


def _pod_ready(pod: dict[str, Any]) -> str:
    containers = (pod.get("spec") or {}).get("containers") or []
    ready = sum(1 for c in (pod.get("status") or {}).get("containerStatuses") or [] if c.get("ready"))
    return f"{ready}/{len(containers)}"


def _restarts(pod: dict[str, Any]) -> int:
    return sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or [])


def _node_status(node: dict[str, Any]) -> str:
    ready = "Unknown"
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            ready = "Ready" if condition.get("status") == "True" else "NotReady"
    return f"{ready},SchedulingDisabled" if (node.get("spec") or {}).get("unschedulable") else ready


def _node_roles(node: dict[str, Any]) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in (node["metadata"].get("labels") or {}) if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _readiness_gates(pod: dict[str, Any]) -> str:
    """``READINESS GATES`` as the real printer writes it: how many of the pod's gates are True."""
    gates = [str(g.get("conditionType")) for g in (pod.get("spec") or {}).get("readinessGates") or []]
    if not gates:
        return "<none>"
    true = {str(c.get("type")) for c in (pod.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    return f"{sum(1 for gate in gates if gate in true)}/{len(gates)}"


def _node_info(node: dict[str, Any], key: str, missing: str) -> str:
    return str(((node.get("status") or {}).get("nodeInfo") or {}).get(key) or missing)


def _node_address(node: dict[str, Any], kind: str) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == kind and address.get("address"):
            return str(address["address"])
    return "<none>"


def _job_completions(job: dict[str, Any]) -> str:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    return f"{int(status.get('succeeded') or 0)}/{spec.get('completions', 1)}"


def _job_status(job: dict[str, Any]) -> str:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed", "Suspended"):
            return str(condition["type"])
    return "Running"


NAME: Column = ("Name", "string", 0, lambda o: o["metadata"]["name"])
AGE: Column = ("Age", "string", 0, _age)

BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("", "Pod"): [
        NAME,
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "integer", 0, _restarts),
        AGE,
        ("IP", "string", 1, lambda o: (o.get("status") or {}).get("podIP") or "<none>"),
        ("Node", "string", 1, lambda o: (o.get("spec") or {}).get("nodeName") or "<none>"),
        ("Nominated Node", "string", 1, lambda o: (o.get("status") or {}).get("nominatedNodeName") or "<none>"),
        ("Readiness Gates", "string", 1, _readiness_gates),
    ],
    ("", "Node"): [
        NAME,
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        AGE,
        ("Version", "string", 0, lambda o: _node_info(o, "kubeletVersion", "")),
        ("Internal-IP", "string", 1, lambda o: _node_address(o, "InternalIP")),
        ("External-IP", "string", 1, lambda o: _node_address(o, "ExternalIP")),
        ("OS-Image", "string", 1, lambda o: _node_info(o, "osImage", "<unknown>")),
        ("Kernel-Version", "string", 1, lambda o: _node_info(o, "kernelVersion", "<unknown>")),
        ("Container-Runtime", "string", 1, lambda o: _node_info(o, "containerRuntimeVersion", "<unknown>")),
    ],
    ("", "ServiceAccount"): [NAME, ("Secrets", "string", 0, lambda o: len(o.get("secrets") or [])), AGE],
    ("", "Event"): [
        ("Last Seen", "string", 0, _last_seen),
        ("Type", "string", 0, lambda o: o.get("type", "")),
        ("Reason", "string", 0, lambda o: o.get("reason", "")),
        ("Object", "string", 0, _event_object),
        ("Message", "string", 0, lambda o: o.get("message") or o.get("note") or ""),
        ("Name", "string", 1, lambda o: o["metadata"]["name"]),
    ],
    ("", "Namespace"): [NAME, ("Status", "string", 0, lambda o: (o.get("status") or {}).get("phase", "")), AGE],
    ("batch", "Job"): [
        NAME,
        ("Status", "string", 0, _job_status),
        ("Completions", "string", 0, _job_completions),
        AGE,
    ],
}


@cache
def _crd_columns() -> dict[tuple[str, str, str], list[Column]]:
    found: dict[tuple[str, str, str], list[Column]] = {}
    for key, version in crd_versions().items():
        columns: list[Column] = [NAME]
        for column in version.printer_columns:
            path_text = str(column.get("jsonPath", ""))
            if path_text == ".metadata.creationTimestamp":
                columns.append(AGE)
                continue
            kind = "integer" if column.get("type") == "integer" else "string"
            columns.append((str(column["name"]), kind, int(column.get("priority", 0)), _path_cell(path_text)))
        if AGE not in columns:
            columns.append(AGE)
        found[key] = columns
    return found


def columns_for(rtype: ResourceType) -> list[Column]:
    builtin = BUILTIN.get((rtype.group, rtype.kind))
    if builtin is not None:
        return builtin
    return _crd_columns().get((rtype.group, rtype.version, rtype.kind), [NAME, AGE])


def _row_object(rtype: ResourceType, obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return {"apiVersion": rtype.api_version, "kind": rtype.kind, **obj}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(
    rtype: ResourceType, objects: list[dict[str, Any]], metadata: dict[str, Any], include: str = "Metadata"
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (a list's items, or one object got by name)."""
    columns = columns_for(rtype)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [cell(obj) for _, _, _, cell in columns]}
        shown = _row_object(rtype, obj, include)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [
            {"name": name, "type": kind, "format": "name" if name == "Name" else "", "description": "", "priority": p}
            for name, kind, p, _ in columns
        ],
        "rows": rows,
    }
