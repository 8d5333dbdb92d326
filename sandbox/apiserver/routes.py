"""URL parsing: which resource type, namespace, name and subresource a request addresses."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ApiError
from .kinds import Registry, ResourceType


@dataclass(frozen=True)
class Target:
    rtype: ResourceType
    namespace: str | None  # None: all namespaces (or a cluster-scoped type)
    name: str | None
    subresource: str | None


def _not_found() -> ApiError:
    return ApiError(404, "the server could not find the requested resource")


def _subresources(rtype: ResourceType) -> tuple[str, ...]:
    found: tuple[str, ...] = ("status",) if rtype.status_subresource else ()
    if (rtype.group, rtype.kind) == ("", "Pod"):
        found += ("binding", "log")
    return found


def parse_target(registry: Registry, path: str) -> Target:
    """``/api/v1[/namespaces/NS]/PLURAL[/NAME[/status]]`` or the same under ``/apis/GROUP/VERSION``."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise _not_found()
    namespace: str | None = None
    # /namespaces/NS/PLURAL... addresses a namespaced type; /namespaces[/NAME[/status]] the Namespaces
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] != "status":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise _not_found()
    rtype = registry.by_path(group, version, rest[0])
    if rtype is None:
        raise _not_found()
    if namespace is not None and not rtype.namespaced:
        raise _not_found()
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) == 3 else None
    if subresource is not None and subresource not in _subresources(rtype):
        raise _not_found()
    if rtype.namespaced and name is not None and namespace is None:
        raise _not_found()
    return Target(rtype, namespace, name, subresource)


def request_verb(method: str, target: Target, watch: bool) -> str:
    """The Kubernetes verb of a request, as RBAC and the fault rules name it."""
    if target.subresource == "binding":
        # pods/binding is create-only, as on the real server
        if method != "POST":
            raise ApiError(405, f"{method} is not allowed on pods/binding", reason="MethodNotAllowed")
        return "create"
    if target.subresource == "log" and method != "GET":
        raise ApiError(405, f"{method} is not allowed on pods/log", reason="MethodNotAllowed")
    if method == "GET":
        if target.name is not None:
            return "get"
        return "watch" if watch else "list"
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    if method not in verbs or (method == "POST") != (target.name is None):
        raise ApiError(405, f"{method} is not allowed on {target.rtype.plural}", reason="MethodNotAllowed")
    return verbs[method]
