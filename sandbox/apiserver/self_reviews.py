"""What the caller may do, and who it is: ``kubectl auth can-i`` and ``kubectl auth whoami``.

``SelfSubjectAccessReview`` and ``SelfSubjectRulesReview`` (authorization.k8s.io/v1) and
``SelfSubjectReview`` (authentication.k8s.io/v1) are create-only and never stored: the server
answers each from the caller's identity. This server has one credential, the sandbox's
administrator (``system:admin`` in ``system:masters``, as admission reviews name it), whom the real
server's authorizer allows everything; the rules review lists what ``cluster-admin`` and the
default discovery roles grant, as kube-apiserver's RBAC authorizer would for that user.
"""

from __future__ import annotations

from typing import Any

from .admission import SANDBOX_USER
from .errors import ApiError

AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"
REVIEWS: dict[str, tuple[str, str]] = {
    # path -> (group, kind)
    f"/apis/{AUTHORIZATION}/v1/selfsubjectaccessreviews": (AUTHORIZATION, "SelfSubjectAccessReview"),
    f"/apis/{AUTHORIZATION}/v1/selfsubjectrulesreviews": (AUTHORIZATION, "SelfSubjectRulesReview"),
    f"/apis/{AUTHENTICATION}/v1/selfsubjectreviews": (AUTHENTICATION, "SelfSubjectReview"),
}
# discovery: group -> the review resources it serves (all create-only, cluster-scoped)
DISCOVERY: dict[str, list[tuple[str, str]]] = {
    AUTHORIZATION: [
        ("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
        ("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
    ],
    AUTHENTICATION: [("selfsubjectreviews", "SelfSubjectReview")],
}
PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*"]


def is_review_path(path: str) -> bool:
    return path in REVIEWS


def discovery_resources(group: str) -> list[dict[str, Any]]:
    return [
        {"name": plural, "singularName": kind.lower(), "namespaced": False, "kind": kind, "verbs": ["create"]}
        for plural, kind in DISCOVERY.get(group, [])
    ]


def _rules() -> dict[str, Any]:
    return {
        "resourceRules": [
            {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
            {"verbs": ["create"], "apiGroups": [AUTHORIZATION], "resources": ["selfsubjectaccessreviews"]},
            {"verbs": ["create"], "apiGroups": [AUTHORIZATION], "resources": ["selfsubjectrulesreviews"]},
            {"verbs": ["create"], "apiGroups": [AUTHENTICATION], "resources": ["selfsubjectreviews"]},
        ],
        "nonResourceRules": [
            {"verbs": ["*"], "nonResourceURLs": ["*"]},
            {"verbs": ["get"], "nonResourceURLs": DISCOVERY_URLS},
            {"verbs": ["get"], "nonResourceURLs": PUBLIC_URLS},
        ],
        "incomplete": False,
    }


def answer_review(path: str, body: Any) -> dict[str, Any]:
    """The review at ``path`` completed with its status (the server answers 201 Created)."""
    group, kind = REVIEWS[path]
    if not isinstance(body, dict):
        raise ApiError.bad_request("the request body must be a JSON object")
    if body.get("kind", kind) != kind or body.get("apiVersion", f"{group}/v1") != f"{group}/v1":
        raise ApiError.bad_request(
            f"the API version in the data ({body.get('apiVersion')}) or kind ({body.get('kind')}) does not "
            f"match the expected {group}/v1 {kind}"
        )
    spec = body.get("spec") or {}
    if kind == "SelfSubjectAccessReview":
        resource, other = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if (resource is None) == (other is None):
            raise ApiError(
                422,
                f'{kind}.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": '
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        status: dict[str, Any] = {"allowed": True}
    elif kind == "SelfSubjectRulesReview":
        status = _rules()
    else:
        user = {"username": SANDBOX_USER["username"], "groups": list(SANDBOX_USER["groups"])}
        return {"kind": kind, "apiVersion": f"{group}/v1", "metadata": {}, "status": {"userInfo": user}}
    return {"kind": kind, "apiVersion": f"{group}/v1", "metadata": {}, "spec": spec, "status": status}
