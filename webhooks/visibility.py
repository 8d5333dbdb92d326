"""Kueue's visibility API, served from the live engine: pending workloads with their positions.

``GET /apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/{name}/pendingworkloads`` and
``.../namespaces/{namespace}/localqueues/{name}/pendingworkloads`` answer a
``PendingWorkloadsSummary`` exactly as Kueue's aggregated API server does (items with metadata,
priority, localQueueName, positionInClusterQueue and positionInLocalQueue, counted from 0),
paged by ``offset`` (default 0) and ``limit`` (default 1000). Tools written for Kueue (kueuectl,
``kubectl get --raw``) read trainyard's queues through it once the APIService in
``manifests/visibility`` registers the service with the API server.

Every request needs a bearer token that ``authenticate`` accepts: ``token_review`` asks the
API server (authentication.k8s.io/v1 TokenReview) in production; tests pass ``fixed_token``.
The answer is read from a ``PendingWorkloadsSource`` — anything holding the engine; the
controller process passes its own, so positions are those the next admission cycle will use.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from aiohttp import web

from scheduler.engine import AdmissionEngine
from scheduler.queues import PendingWorkload, positioned

GROUP = "visibility.kueue.x-k8s.io"
VERSION = "v1beta1"
PREFIX = f"/apis/{GROUP}/{VERSION}"
DEFAULT_LIMIT = 1000  # Kueue's SetDefaults_PendingWorkloadOptions

TokenCheck = Callable[[str], Awaitable[bool]]


class PendingWorkloadsSource(Protocol):
    """What the visibility API reads: the engine that admits (the controller's, in the service)."""

    @property
    def engine(self) -> AdmissionEngine: ...


@dataclass
class EngineSource:
    """A ``PendingWorkloadsSource`` over a bare engine."""

    engine: AdmissionEngine


@dataclass
class VisibilityService:
    source: PendingWorkloadsSource
    authenticate: TokenCheck
    clock: Callable[[], float] = time.time


VISIBILITY_KEY = web.AppKey("visibility", VisibilityService)


def fixed_token(token: str) -> TokenCheck:
    """Accept exactly one bearer token (tests, single-tenant setups)."""

    async def check(presented: str) -> bool:
        return presented == token

    return check


def token_review(api_client: Any, *, cache_seconds: float = 60.0) -> TokenCheck:
    """Ask the API server whether a token is valid (TokenReview), remembering answers a while.

    ``api_client`` is a kubernetes-asyncio ``ApiClient`` with the service account's credentials
    (its RBAC needs ``create`` on ``tokenreviews``, as in manifests/visibility).
    """
    remembered: dict[str, tuple[float, bool]] = {}

    async def check(presented: str) -> bool:
        now = time.monotonic()
        known = remembered.get(presented)
        if known is not None and known[0] > now:
            return known[1]
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": presented}}
        answer = await api_client.call_api(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            "POST",
            body=review,
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            response_types_map={200: "object", 201: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
        authenticated = bool(((answer or {}).get("status") or {}).get("authenticated"))
        if len(remembered) > 10_000:
            remembered.clear()
        remembered[presented] = (now + cache_seconds, authenticated)
        return authenticated

    return check


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.Response(body=json.dumps(body).encode(), status=code, content_type="application/json")


def _timestamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def summary(items: list[PendingWorkload], offset: int, limit: int) -> dict[str, Any]:
    """A ``PendingWorkloadsSummary`` of ``items[offset:offset+limit]``."""
    page = items[offset : offset + limit]
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": {"creationTimestamp": None},
        "items": [
            {
                "metadata": {
                    "name": entry.name,
                    "namespace": entry.namespace,
                    "creationTimestamp": _timestamp(entry.created),
                },
                "priority": entry.priority,
                "localQueueName": entry.local_queue,
                "positionInClusterQueue": entry.position_in_cluster_queue,
                "positionInLocalQueue": entry.position_in_local_queue,
            }
            for entry in page
        ],
    }


def _options(request: web.Request) -> tuple[int, int] | web.Response:
    values = {}
    for name, default in (("offset", 0), ("limit", DEFAULT_LIMIT)):
        text = request.query.get(name)
        try:
            value = default if text in (None, "") else int(text)
        except ValueError:
            return _status(400, "BadRequest", f"{name} must be an integer, got {text!r}")
        if value < 0:
            return _status(400, "BadRequest", f"{name} must be 0 or more, got {value}")
        values[name] = value
    return values["offset"], values["limit"] or DEFAULT_LIMIT


async def _authorized(request: web.Request) -> VisibilityService | web.Response:
    service = request.app.get(VISIBILITY_KEY)
    if service is None:
        return _status(404, "NotFound", f"the visibility API ({GROUP}/{VERSION}) is not enabled on this server")
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return _status(401, "Unauthorized", "a bearer token is required (Authorization: Bearer TOKEN)")
    if not await service.authenticate(token.strip()):
        return _status(401, "Unauthorized", "the bearer token was not accepted")
    return service


def _json(document: Any) -> web.Response:
    return web.Response(body=json.dumps(document).encode(), content_type="application/json")


async def cluster_queue_pending(request: web.Request) -> web.Response:
    service = await _authorized(request)
    if isinstance(service, web.Response):
        return service
    options = _options(request)
    if isinstance(options, web.Response):
        return options
    name = request.match_info["name"]
    engine = service.source.engine
    if name not in engine.model.cluster_queues:
        return _status(404, "NotFound", f'clusterqueues.{GROUP} "{name}" not found')
    items = positioned(engine, name, service.clock())
    return _json(summary(items, *options))


async def local_queue_pending(request: web.Request) -> web.Response:
    service = await _authorized(request)
    if isinstance(service, web.Response):
        return service
    options = _options(request)
    if isinstance(options, web.Response):
        return options
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    engine = service.source.engine
    local_queue = engine.model.local_queues.get(f"{namespace}/{name}")
    if local_queue is None:
        return _status(404, "NotFound", f'localqueues.{GROUP} "{name}" not found in namespace {namespace}')
    items = positioned(engine, local_queue.spec.cluster_queue, service.clock(), namespace=namespace, local_queue=name)
    return _json(summary(items, *options))


async def discovery(request: web.Request) -> web.Response:
    service = await _authorized(request)
    if isinstance(service, web.Response):
        return service
    resources = [
        {
            "name": "clusterqueues",
            "singularName": "clusterqueue",
            "namespaced": False,
            "kind": "ClusterQueue",
            "verbs": [],
        },
        {
            "name": "clusterqueues/pendingworkloads",
            "singularName": "",
            "namespaced": False,
            "kind": "PendingWorkloadsSummary",
            "verbs": ["get"],
        },
        {"name": "localqueues", "singularName": "localqueue", "namespaced": True, "kind": "LocalQueue", "verbs": []},
        {
            "name": "localqueues/pendingworkloads",
            "singularName": "",
            "namespaced": True,
            "kind": "PendingWorkloadsSummary",
            "verbs": ["get"],
        },
    ]
    return _json(
        {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}", "resources": resources}
    )


def add_visibility_routes(app: web.Application) -> None:
    """Register the visibility endpoints; they answer once ``app[VISIBILITY_KEY]`` is set."""
    app.router.add_get(PREFIX, discovery)
    app.router.add_get(f"{PREFIX}/clusterqueues/{{name}}/pendingworkloads", cluster_queue_pending)
    app.router.add_get(f"{PREFIX}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads", local_queue_pending)
