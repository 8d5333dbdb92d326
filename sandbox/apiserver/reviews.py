"""TokenReview and SubjectAccessReview for the fake API server: who a token is, what a user may do.

An extension API server (trainyard's visibility API, as Kueue's) asks the API server both
questions for every caller. ``Reviews`` answers them from a table of tokens and a list of RBAC-like
grants; ``ReviewingApiServer`` is the fake API server serving
``POST /apis/authentication.k8s.io/v1/tokenreviews`` and
``POST /apis/authorization.k8s.io/v1/subjectaccessreviews`` from it, beside everything else.
Grants read as RBAC rules do: a subject (user, or group with ``group:`` in front), verbs,
API groups and resources (``clusterqueues/pendingworkloads``: a subresource), optional
resource names, or non-resource URLs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .errors import ApiError
from .server import FakeApiServer, bearer_matches

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...] = ()
    uid: str = ""


@dataclass(frozen=True)
class Grant:
    """One RBAC rule bound to one subject: ``"alice"`` or ``"group:batch-admins"``."""

    subject: str
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    def binds(self, user: str, groups: tuple[str, ...]) -> bool:
        if self.subject.startswith("group:"):
            return self.subject.removeprefix("group:") in groups
        return self.subject == user

    def allows(self, spec: Mapping[str, Any]) -> bool:
        resource = spec.get("resourceAttributes")
        if isinstance(resource, Mapping):
            return self._allows_resource(resource)
        other = spec.get("nonResourceAttributes") or {}
        path = str(other.get("path") or "")
        verb = str(other.get("verb") or "")
        urls = any(url == path or (url.endswith("*") and path.startswith(url[:-1])) for url in self.non_resource_urls)
        return urls and _matches(self.verbs, verb)

    def _allows_resource(self, resource: Mapping[str, Any]) -> bool:
        name = str(resource.get("resource") or "")
        if resource.get("subresource"):
            name = f"{name}/{resource['subresource']}"
        return (
            _matches(self.verbs, str(resource.get("verb") or ""))
            and _matches(self.api_groups, str(resource.get("group") or ""))
            and _matches(self.resources, name)
            and (not self.resource_names or str(resource.get("name") or "") in self.resource_names)
        )


def _matches(allowed: tuple[str, ...], value: str) -> bool:
    return "*" in allowed or value in allowed


@dataclass
class Reviews:
    """Tokens the fake API server knows (beyond its own) and what their users may do."""

    tokens: dict[str, Identity] = field(default_factory=dict)
    grants: list[Grant] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)  # every review body, for tests

    def token_review(self, body: Mapping[str, Any]) -> dict[str, Any]:
        token = str((body.get("spec") or {}).get("token") or "")
        identity = self.tokens.get(token)
        status: dict[str, Any] = {"authenticated": identity is not None}
        if identity is not None:
            # as the real server, every authenticated user is also in system:authenticated
            groups = [*identity.groups, "system:authenticated"]
            status["user"] = {"username": identity.user, "uid": identity.uid, "groups": groups}
        else:
            status["error"] = "invalid bearer token"
        return {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": body.get("spec"),
            "status": status,
        }

    def access_review(self, body: Mapping[str, Any]) -> dict[str, Any]:
        spec = body.get("spec") or {}
        user, groups = str(spec.get("user") or ""), tuple(spec.get("groups") or ())
        allowed = any(grant.binds(user, groups) and grant.allows(spec) for grant in self.grants)
        status: dict[str, Any] = {"allowed": allowed}
        if allowed:
            status["reason"] = "allowed by a grant of the fake API server"
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec, "status": status}

    def answer(self, path: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError.bad_request("the request body must be a JSON object")
        self.asked.append(body)
        return self.token_review(body) if path == TOKEN_REVIEWS else self.access_review(body)


class ReviewingApiServer(FakeApiServer):
    """The fake API server that also answers TokenReviews and SubjectAccessReviews from ``reviews``."""

    def __init__(self, reviews: Reviews, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reviews = reviews

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/")
        if request.method != "POST" or path not in (TOKEN_REVIEWS, ACCESS_REVIEWS):
            return await super()._serve(request)
        if self.token is not None and not bearer_matches(request.headers.get("Authorization"), self.token):
            raise ApiError(401, "Unauthorized")
        try:
            body = await request.json()
        except ValueError:
            raise ApiError.bad_request("the request body is not JSON") from None
        answer = self.reviews.answer(path, body)
        return web.Response(body=json.dumps(answer).encode(), status=201, content_type="application/json")
