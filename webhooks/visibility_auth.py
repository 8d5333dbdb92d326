"""Who may read the visibility API: authentication and authorization as an aggregated API server does it.

Kueue's visibility server is an extension API server behind the Kubernetes aggregator, and so is
trainyard's (manifests/visibility). Such a server trusts two kinds of callers:

- **the aggregator (front proxy)**: kube-apiserver has already authenticated the user and passes
  who it is in ``X-Remote-User`` / ``X-Remote-Group`` / ``X-Remote-Extra-*`` headers, over a TLS
  connection where it presents its proxy client certificate. The headers are believed only when
  that certificate is signed by the *requestheader client CA* (``--requestheader-client-ca-file``)
  and, when a list of allowed names is given, its common name is on it
  (``--requestheader-allowed-names``): anyone else could write those headers too.
- **a direct caller with a bearer token**, checked with the API server (TokenReview).

Then every request is authorized with a SubjectAccessReview: ``get`` on
``clusterqueues/pendingworkloads`` or ``localqueues/pendingworkloads`` (group
``visibility.kueue.x-k8s.io``) for a named queue, or the discovery path as a non-resource URL,
exactly the attributes RBAC rules name. Answers are remembered for a few seconds, as the API
server's delegating authenticator and authorizer do, so a busy dashboard does not flood it.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from aiohttp import web

GROUP = "visibility.kueue.x-k8s.io"
VERSION = "v1beta1"
# Kubernetes' defaults for --requestheader-*-headers
USERNAME_HEADERS = ("X-Remote-User",)
GROUP_HEADERS = ("X-Remote-Group",)
EXTRA_PREFIXES = ("X-Remote-Extra-",)
REMEMBERED_MAX = 10_000
V = TypeVar("V")


@dataclass(frozen=True)
class Caller:
    """An authenticated user, as TokenReview and the front-proxy headers describe one."""

    user: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uid: str = ""


@dataclass(frozen=True)
class Attributes:
    """What a request does, in the terms of a SubjectAccessReview (and of RBAC rules)."""

    verb: str
    path: str
    resource: str | None = None  # None: a non-resource URL (discovery)
    subresource: str | None = None
    name: str | None = None
    namespace: str | None = None

    def forbidden(self, caller: Caller) -> str:
        """The API server's wording of a refusal."""
        if self.resource is None:
            return f'User "{caller.user}" cannot {self.verb} path "{self.path}"'
        scope = f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return (
            f'{self.resource}.{GROUP} "{self.name}" is forbidden: User "{caller.user}" cannot {self.verb} '
            f'resource "{resource}" in API group "{GROUP}" {scope}'
        )


class AuthError(Exception):
    """A request refused before it is served: ``status`` 401 (who?) or 403 (not allowed)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


TokenCheck = Callable[[str], Awaitable[Caller | None]]
Authorize = Callable[[Caller, Attributes], Awaitable[bool]]


# ---------------------------------------------------------------------------- authentication


def _common_name(peercert: Mapping[str, Any]) -> str:
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""


@dataclass(frozen=True)
class FrontProxy:
    """Trust ``X-Remote-*`` headers on connections with a client certificate the requestheader CA signed.

    The TLS context must request client certificates and trust only that CA for them
    (``webhooks.tls.require_client_ca``); the handshake then refuses any other certificate, so a
    certificate seen here is one the CA signed.
    """

    allowed_names: frozenset[str] = frozenset()
    username_headers: tuple[str, ...] = USERNAME_HEADERS
    group_headers: tuple[str, ...] = GROUP_HEADERS
    extra_prefixes: tuple[str, ...] = EXTRA_PREFIXES

    def caller(self, request: web.Request) -> Caller | None:
        """The user the front proxy names, or None for a request without a client certificate."""
        transport = request.transport
        peercert = transport.get_extra_info("peercert") if transport is not None else None
        if not peercert:
            return None
        name = _common_name(peercert)
        if self.allowed_names and name not in self.allowed_names:
            allowed = ", ".join(sorted(self.allowed_names))
            raise AuthError(
                401, f"client certificate {name!r} is not one of the requestheader allowed names ({allowed})"
            )
        user = next((request.headers[h] for h in self.username_headers if request.headers.get(h)), "")
        if not user:
            headers = " or ".join(self.username_headers)
            raise AuthError(401, f"a front-proxy request must name its user in {headers}")
        groups = tuple(value for header in self.group_headers for value in request.headers.getall(header, []))
        extra: dict[str, tuple[str, ...]] = {}
        for header, value in request.headers.items():
            for prefix in self.extra_prefixes:
                if header.lower().startswith(prefix.lower()):
                    # Kubernetes percent-encodes extra keys in header names and lowercases them
                    key = urllib.parse.unquote(header[len(prefix) :]).lower()
                    extra[key] = (*extra.get(key, ()), value)
        return Caller(user, groups, extra)


EXTENSION_AUTH_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


@dataclass(frozen=True)
class RequestHeaderConfig:
    """The aggregator's front-proxy settings, as kube-apiserver publishes them for extension servers."""

    client_ca_pem: str
    front_proxy: FrontProxy


def _json_list(data: Mapping[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    text = data.get(key)
    if not text:
        return default
    try:
        values = json.loads(text)
    except ValueError:
        return default
    return tuple(str(v) for v in values) if isinstance(values, list) and values else default


async def request_header_config(api_client: Any) -> RequestHeaderConfig | None:
    """Read ``kube-system/extension-apiserver-authentication`` as every aggregated API server does.

    None when the cluster has no aggregator front proxy configured (no ConfigMap, or no
    ``requestheader-client-ca-file`` in it), and when this service may not read it: the
    ``extension-apiserver-authentication-reader`` Role comes with manifests/visibility, and without
    it the read is not even tried (a SelfSubjectAccessReview asks first), so an install without the
    visibility API makes no request its RBAC refuses.
    """
    from kubernetes_asyncio.client.exceptions import ApiException

    if not await _may_read_extension_auth(api_client):
        return None
    try:
        answer = await api_client.call_api(
            EXTENSION_AUTH_CONFIGMAP,
            "GET",
            header_params={"Accept": "application/json"},
            response_types_map={200: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
    except ApiException as error:
        if error.status in (403, 404):
            return None
        raise
    data = (answer or {}).get("data") or {}
    pem = data.get("requestheader-client-ca-file")
    if not pem:
        return None
    proxy = FrontProxy(
        frozenset(_json_list(data, "requestheader-allowed-names", ())),
        _json_list(data, "requestheader-username-headers", USERNAME_HEADERS),
        _json_list(data, "requestheader-group-headers", GROUP_HEADERS),
        _json_list(data, "requestheader-extra-headers-prefix", EXTRA_PREFIXES),
    )
    return RequestHeaderConfig(str(pem), proxy)


async def _may_read_extension_auth(api_client: Any) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "namespace": "kube-system",
                "verb": "get",
                "resource": "configmaps",
                "name": "extension-apiserver-authentication",
            }
        },
    }
    from kubernetes_asyncio.client.exceptions import ApiException

    try:
        answer = await api_client.call_api(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            "POST",
            body=review,
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            response_types_map={201: "object", 200: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
    except ApiException:
        return True  # a server without the review: try the read, as before
    return bool(((answer or {}).get("status") or {}).get("allowed"))


def fixed_token(token: str, user: str = "visibility-reader", groups: Iterable[str] = ()) -> TokenCheck:
    """Accept exactly one bearer token as one user (tests, single-tenant setups)."""
    caller = Caller(user, tuple(groups))

    async def check(presented: str) -> Caller | None:
        return caller if presented == token else None

    return check


class _Remembered(Generic[V]):
    """Answers kept for ``seconds`` (bounded, cleared when full)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.answers: dict[Any, tuple[float, V]] = {}

    def get(self, key: Any) -> tuple[bool, V | None]:
        known = self.answers.get(key)
        if known is None or known[0] <= time.monotonic():
            return False, None
        return True, known[1]

    def put(self, key: Any, value: V) -> V:
        if len(self.answers) >= REMEMBERED_MAX:
            self.answers.clear()
        self.answers[key] = (time.monotonic() + self.seconds, value)
        return value


async def _post(api_client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = await api_client.call_api(
        path,
        "POST",
        body=body,
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        response_types_map={200: "object", 201: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )
    return answer if isinstance(answer, dict) else {}


def token_review(api_client: Any, *, cache_seconds: float = 10.0) -> TokenCheck:
    """Ask the API server who a bearer token belongs to (authentication.k8s.io/v1 TokenReview).

    ``api_client`` is a kubernetes-asyncio ``ApiClient`` with the service account's credentials
    (its RBAC needs ``create`` on ``tokenreviews``, as in manifests/visibility).
    """
    remembered: _Remembered[Caller | None] = _Remembered(cache_seconds)

    async def check(presented: str) -> Caller | None:
        known, caller = remembered.get(presented)
        if known:
            return caller
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": presented}}
        status = (await _post(api_client, "/apis/authentication.k8s.io/v1/tokenreviews", review)).get("status") or {}
        user = status.get("user") or {}
        if not status.get("authenticated") or not user.get("username"):
            return remembered.put(presented, None)
        extra = {str(k): tuple(v or ()) for k, v in (user.get("extra") or {}).items()}
        found = Caller(str(user["username"]), tuple(user.get("groups") or ()), extra, str(user.get("uid") or ""))
        return remembered.put(presented, found)

    return check


@dataclass(frozen=True)
class Authenticator:
    """Front proxy first (the aggregator's way in), then a bearer token; neither: 401."""

    token: TokenCheck | None = None
    front_proxy: FrontProxy | None = None

    async def __call__(self, request: web.Request) -> Caller:
        if self.front_proxy is not None:
            caller = self.front_proxy.caller(request)
            if caller is not None:
                return caller
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if self.token is None or scheme.lower() != "bearer" or not token.strip():
            ways = ["a bearer token (Authorization: Bearer TOKEN)"] if self.token is not None else []
            if self.front_proxy is not None:
                ways.append("the aggregator's client certificate with X-Remote-User")
            raise AuthError(401, f"Unauthorized: this API needs {' or '.join(ways) or 'no caller (auth off)'}")
        caller = await self.token(token.strip())
        if caller is None:
            raise AuthError(401, "Unauthorized: the bearer token was not accepted")
        return caller


# ----------------------------------------------------------------------------- authorization


def subject_access_review(api_client: Any, *, cache_seconds: float = 10.0) -> Authorize:
    """Ask the API server whether a caller may do something (authorization.k8s.io/v1 SubjectAccessReview).

    The service account needs ``create`` on ``subjectaccessreviews`` (manifests/visibility).
    """
    remembered: _Remembered[bool] = _Remembered(cache_seconds)

    async def allowed(caller: Caller, attributes: Attributes) -> bool:
        key = (caller.user, caller.groups, tuple(sorted(caller.extra.items())), attributes)
        known, answer = remembered.get(key)
        if known:
            return bool(answer)
        spec: dict[str, Any] = {"user": caller.user, "groups": list(caller.groups)}
        if caller.extra:
            spec["extra"] = {key: list(values) for key, values in caller.extra.items()}
        if caller.uid:
            spec["uid"] = caller.uid
        if attributes.resource is None:
            spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
        else:
            resource = {
                "group": GROUP,
                "version": VERSION,
                "resource": attributes.resource,
                "subresource": attributes.subresource or "",
                "name": attributes.name or "",
                "namespace": attributes.namespace or "",
                "verb": attributes.verb,
            }
            spec["resourceAttributes"] = resource
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
        status = (await _post(api_client, path, review)).get("status") or {}
        return remembered.put(key, bool(status.get("allowed")) and not status.get("denied"))

    return allowed


def allow_users(*users: str) -> Authorize:
    """A fixed policy: these users may read everything, nobody else anything (tests, single tenant)."""
    permitted = frozenset(users)

    async def allowed(caller: Caller, attributes: Attributes) -> bool:
        return caller.user in permitted

    return allowed


@dataclass(frozen=True)
class Guard:
    """Authenticate, then authorize; ``check`` returns the caller or raises ``AuthError``."""

    authenticate: Authenticator
    authorize: Authorize

    async def check(self, request: web.Request, attributes: Attributes) -> Caller:
        caller = await self.authenticate(request)
        if not await self.authorize(caller, attributes):
            raise AuthError(403, attributes.forbidden(caller))
        return caller
