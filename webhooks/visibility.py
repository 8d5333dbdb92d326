"""Kueue's visibility API, served from the live engine: pending workloads with their positions.

``GET /apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/{name}/pendingworkloads`` and
``.../namespaces/{namespace}/localqueues/{name}/pendingworkloads`` answer a
``PendingWorkloadsSummary`` exactly as Kueue's aggregated API server does (items with metadata,
priority, localQueueName, positionInClusterQueue and positionInLocalQueue, counted from 0),
paged by ``offset`` (default 0) and ``limit`` (default 1000). Tools written for Kueue (kueuectl,
``kubectl get --raw``) read trainyard's queues through it once the APIService in
``manifests/visibility`` registers the service with the API server.

Every request passes the service's ``Guard`` (``webhooks.visibility_auth``): the aggregator's
front-proxy client certificate with ``X-Remote-User``, or a bearer token checked by TokenReview,
then a SubjectAccessReview for ``get`` on ``clusterqueues/pendingworkloads`` or
``localqueues/pendingworkloads``, as Kueue's aggregated server does. When those reviews cannot be
asked (the API server is unreachable or failing) the answer is 503, naming nothing of the server.
The answer is read from a ``PendingWorkloadsSource`` — anything holding the engine; the
controller process passes its own, so positions are those the next admission cycle will use.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from aiohttp import web

from runtimes.k8s import wire
from scheduler.engine import AdmissionEngine
from scheduler.queues import PendingWorkload, positioned
from webhooks.visibility_auth import GROUP, VERSION, Attributes, AuthError, Guard

PREFIX = f"/apis/{GROUP}/{VERSION}"
log = logging.getLogger(__name__)
DEFAULT_LIMIT = 1000  # Kueue's SetDefaults_PendingWorkloadOptions


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
    guard: Guard
    clock: Callable[[], float] = time.time


VISIBILITY_KEY = web.AppKey("visibility", VisibilityService)


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
    return web.Response(body=wire.dumps(body), status=code, content_type="application/json")


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


async def _authorized(request: web.Request, attributes: Attributes) -> VisibilityService | web.Response:
    service = request.app.get(VISIBILITY_KEY)
    if service is None:
        return _status(404, "NotFound", f"the visibility API ({GROUP}/{VERSION}) is not enabled on this server")
    try:
        await service.guard.check(request, attributes)
    except AuthError as refused:
        return _status(refused.status, "Unauthorized" if refused.status == 401 else "Forbidden", refused.message)
    except Exception as error:
        # TokenReview or SubjectAccessReview could not be asked (the API server unreachable, or
        # failing): the caller is neither let in nor told where the API server is.
        log.warning(
            "visibility API: checking a request for %s failed: %s: %s", request.path, type(error).__name__, error
        )
        return _status(
            503,
            "ServiceUnavailable",
            "the visibility API cannot check who is calling right now (its authentication and "
            "authorization service did not answer); try again shortly",
        )
    return service


def _pending_attributes(request: web.Request, resource: str) -> Attributes:
    return Attributes(
        verb="get",
        path=request.path,
        resource=resource,
        subresource="pendingworkloads",
        name=request.match_info["name"],
        namespace=request.match_info.get("namespace"),
    )


async def _pending_request(
    request: web.Request, resource: str
) -> tuple[VisibilityService, tuple[int, int]] | web.Response:
    """The service and the paging (offset, limit) of a pendingworkloads request, or the refusal."""
    service = await _authorized(request, _pending_attributes(request, resource))
    if isinstance(service, web.Response):
        return service
    options = _options(request)
    if isinstance(options, web.Response):
        return options
    return service, options


def _json(document: Any) -> web.Response:
    return web.Response(body=wire.dumps(document), content_type="application/json")


async def cluster_queue_pending(request: web.Request) -> web.Response:
    checked = await _pending_request(request, "clusterqueues")
    if isinstance(checked, web.Response):
        return checked
    service, options = checked
    name = request.match_info["name"]
    engine = service.source.engine
    if engine.cluster_queue(name) is None:
        return _status(404, "NotFound", f'clusterqueues.{GROUP} "{name}" not found')
    items = positioned(engine, name, service.clock())
    return _json(summary(items, *options))


async def local_queue_pending(request: web.Request) -> web.Response:
    checked = await _pending_request(request, "localqueues")
    if isinstance(checked, web.Response):
        return checked
    service, options = checked
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    engine = service.source.engine
    local_queue = engine.local_queue(namespace, name)
    if local_queue is None:
        return _status(404, "NotFound", f'localqueues.{GROUP} "{name}" not found in namespace {namespace}')
    items = positioned(engine, local_queue.spec.cluster_queue, service.clock(), namespace=namespace, local_queue=name)
    return _json(summary(items, *options))


async def discovery(request: web.Request) -> web.Response:
    service = await _authorized(request, Attributes(verb="get", path=request.path))
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
