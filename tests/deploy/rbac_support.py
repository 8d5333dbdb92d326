"""The service's RBAC (manifests) and its requests (the sandbox API server's log), compared.

The RBAC authorizer's decision is reproduced for what the tests need: a rule grants a request when
its apiGroups, resources (with ``/subresource``) and verbs name the request's, its Role's namespace
is the request's (a ClusterRole's rules hold everywhere) and, when it lists resourceNames, the
request names one of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sandbox.apiserver import FakeApiServer
from sandbox.apiserver.routes import parse_target

ROOT = Path(__file__).resolve().parents[2]
RBAC_FILES = [
    ROOT / "manifests" / "webhook" / "rbac.yaml",
    ROOT / "manifests" / "install" / "controller-rbac.yaml",
    ROOT / "manifests" / "install" / "leader-election-rbac.yaml",
]
SERVICE_NAMESPACE = "trainyard-system"
Rule = tuple[dict[str, Any], str | None]  # (rule, the namespace it holds in: None for a ClusterRole's)
# A JobSet's condition when all its jobs succeeded, as the JobSet controller writes it.
JOBSET_COMPLETED = {
    "type": "Completed",
    "status": "True",
    "reason": "AllJobsCompleted",
    "message": "jobset completed successfully",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


@dataclass(frozen=True)
class Request:
    """What RBAC reads of one request."""

    verb: str
    group: str
    resource: str  # plural, with /subresource
    namespace: str | None
    name: str | None

    def __str__(self) -> str:
        return f"{self.verb} {self.group or 'core'}/{self.resource}"


def granted_rules(files: Iterable[Path] = RBAC_FILES) -> list[Rule]:
    rules: list[Rule] = []
    for path in files:
        for document in yaml.safe_load_all(path.read_text()):
            if document and document["kind"] in {"ClusterRole", "Role"}:
                scope = document["metadata"].get("namespace") if document["kind"] == "Role" else None
                rules.extend((rule, scope) for rule in document["rules"])
    return rules


def grants(rule: Rule, request: Request) -> bool:
    body, scope = rule
    if scope is not None and scope != request.namespace:
        return False
    if request.group not in body["apiGroups"] or request.resource not in body["resources"]:
        return False
    if request.verb not in body["verbs"]:
        return False
    names = body.get("resourceNames")
    return not names or (request.name is not None and request.name in names)


def allowed(rules: list[Rule], request: Request) -> bool:
    return any(grants(rule, request) for rule in rules)


def served_requests(server: FakeApiServer) -> list[Request]:
    """Every request the server logged, as RBAC sees it. ``LocalCluster`` elects its leader in
    ``default``; the Deployment's Lease lives in the service's namespace, so Leases are moved there."""
    requests = []
    for logged in server.requests:
        target = parse_target(server.registry, logged.path)
        resource = target.rtype.plural + (f"/{target.subresource}" if target.subresource else "")
        namespace = SERVICE_NAMESPACE if target.rtype.plural == "leases" else target.namespace
        requests.append(Request(logged.verb, target.rtype.group, resource, namespace, target.name))
    return requests
