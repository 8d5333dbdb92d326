"""``POST .../pods/{name}/binding``: what kube-scheduler calls to put a pod on a node.

As the real pod registry: the pod must exist, not be bound already, not be terminating, and
have no scheduling gates (each a 409 on ``pods/binding``); binding sets ``spec.nodeName``, copies
the Binding's annotations onto the pod, clears ``status.nominatedNodeName`` and sets the
``PodScheduled`` condition to True. The answer is a ``Status`` of Success with code 201.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ApiError
from .kinds import ResourceType
from .records import clone, timestamp
from .store import Store


def _conflict(name: str, why: str) -> ApiError:
    return ApiError(
        409,
        f'Operation cannot be fulfilled on pods/binding "{name}": {why}',
        reason="Conflict",
        details={"name": name, "kind": "pods/binding"},
    )


def _target_node(body: Mapping[str, Any]) -> str:
    target = body.get("target")
    if not isinstance(target, dict) or not target.get("name"):
        raise ApiError(422, "Binding.target.name: Required value")
    kind = target.get("kind") or "Node"
    if kind != "Node":
        raise ApiError(422, f"Binding.target.kind: Invalid value: {kind!r}: must be empty or 'Node'")
    return str(target["name"])


def bind(
    store: Store, pods: ResourceType, namespace: str, name: str, body: Mapping[str, Any], *, dry_run: bool = False
) -> dict[str, Any]:
    node = _target_node(body)
    bound_name = (body.get("metadata") or {}).get("name")
    if bound_name not in (None, "", name):
        raise ApiError.bad_request(f"the name of the Binding ({bound_name}) does not match the pod ({name})")
    pod = clone(store.get(pods, namespace, name))
    spec = pod.setdefault("spec", {})
    if pod["metadata"].get("deletionTimestamp"):
        raise _conflict(name, f"pod {name} is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise _conflict(name, f'pod {name} is already assigned to node "{spec["nodeName"]}"')
    if spec.get("schedulingGates"):
        raise _conflict(name, f"pod {name} has non-empty .spec.schedulingGates")
    spec["nodeName"] = node
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    if annotations:
        pod["metadata"].setdefault("annotations", {}).update(annotations)
    status = pod.setdefault("status", {})
    status.pop("nominatedNodeName", None)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    now = timestamp()
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now})
    status["conditions"] = conditions
    # one write of the whole pod, spec and status together, as the registry's binding does
    store.replace_stored(pods, namespace, name, pod, dry_run=dry_run)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
