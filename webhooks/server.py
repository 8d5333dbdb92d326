"""The admission webhook server: aiohttp over HTTPS, AdmissionReview admission.k8s.io/v1.

The server never answers 500. A body that cannot be a review gets HTTP 400 (or 413 past the size
limit) with a message; a review whose handler fails gets a *denying* AdmissionReview carrying
the error, from ``deny_on_error`` middleware, so the API server shows the user what went wrong
and the server keeps serving. Handlers run inline on the event loop: they are pure, short and
CPU-bound, and a thread hop would cost more than most of them take.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from runtimes.k8s import wire
from webhooks.handlers import Handler
from webhooks.metrics import WebhookMetrics
from webhooks.objects import ObjectCache
from webhooks.review import BadReview, Verdict, build_response, parse_review
from webhooks.tls import CertificateReloader
from webhooks.visibility import add_visibility_routes

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's own request limit is 3 MiB
DEFAULT_PORT = 9443

CACHE_KEY = web.AppKey("cache", ObjectCache)
METRICS_KEY = web.AppKey("metrics", WebhookMetrics)
READY_KEY = web.AppKey("ready", list[Callable[[], bool]])

_UID = web.RequestKey("admission_uid", str)
_ENDPOINT = web.RequestKey("admission_endpoint", str)
_STARTED = web.RequestKey("admission_started", float)


def default_routes() -> dict[str, Handler]:
    """Endpoint path -> handler, for every admission endpoint the service serves."""
    from webhooks.handlers import kueue, runtimes, trainjobs

    return {
        "/mutate/trainjobs": trainjobs.mutate,
        "/validate/trainjobs": trainjobs.validate,
        "/validate/kueue": kueue.validate,
        "/validate/runtimes": runtimes.validate,
    }


def _json(document: Any, status: int = 200) -> web.Response:
    return web.Response(body=wire.dumps(document), status=status, content_type="application/json")


def _bad_request(message: str, status: int = 400) -> web.Response:
    return _json(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": status}, status
    )


@web.middleware
async def deny_on_error(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Turn any exception into a denying review (or a 400 before a uid was read); never a 500."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise  # 404, 405, 413: already a deliberate client-error answer
    except Exception as error:
        endpoint = request.get(_ENDPOINT, request.path)
        log.exception("admission handler for %s failed", endpoint)
        message = f"trainyard webhook could not evaluate this request ({type(error).__name__}: {error})"
        metrics = request.app[METRICS_KEY]
        started = request.get(_STARTED, time.perf_counter())
        metrics.observe(endpoint, "error", time.perf_counter() - started)
        uid = request.get(_UID)
        if uid is None:
            return _bad_request(message)
        verdict = Verdict.deny(message, code=500, reason="InternalError")
        return _json(build_response(uid, verdict))


def _admission_view(endpoint: str, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def admit(request: web.Request) -> web.Response:
        started = time.perf_counter()
        request[_ENDPOINT] = endpoint
        request[_STARTED] = started
        metrics = request.app[METRICS_KEY]
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge as too_large:
            metrics.observe(endpoint, "error", time.perf_counter() - started)
            return _bad_request(
                f"request body is larger than this webhook accepts ({too_large.text}); "
                "the limit is set with --max-body-bytes",
                413,
            )
        try:
            review = parse_review(body)
        except BadReview as bad:
            metrics.observe(endpoint, "error", time.perf_counter() - started)
            if bad.uid is None:
                return _bad_request(f"not an AdmissionReview: {bad.message}")
            verdict = Verdict.deny(f"malformed AdmissionReview: {bad.message}", code=400, reason="BadRequest")
            return _json(build_response(bad.uid, verdict))
        request[_UID] = review.uid
        verdict = handler(review, request.app[CACHE_KEY])
        document = build_response(review.uid, verdict)
        metrics.observe(endpoint, "allowed" if verdict.allowed else "denied", time.perf_counter() - started)
        return _json(document)

    return admit


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _readyz(request: web.Request) -> web.Response:
    waiting = [check.__name__ for check in request.app[READY_KEY] if not check()]
    if waiting:
        return web.Response(status=503, text=f"not ready: {', '.join(waiting)}")
    return web.Response(text="ok")


async def _metrics(request: web.Request) -> web.Response:
    body, content_type = request.app[METRICS_KEY].exposition()
    response = web.Response(body=body)
    response.headers["Content-Type"] = content_type
    return response


def create_app(
    cache: ObjectCache,
    *,
    routes: Mapping[str, Handler] | None = None,
    metrics: WebhookMetrics | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ready_checks: list[Callable[[], bool]] | None = None,
) -> web.Application:
    """The aiohttp application: admission endpoints plus /healthz, /readyz and /metrics."""
    app = web.Application(middlewares=[deny_on_error], client_max_size=max_body_bytes)
    app[CACHE_KEY] = cache

    def objects_loaded() -> bool:
        return cache.loaded

    app[READY_KEY] = [objects_loaded, *(ready_checks or [])]
    app[METRICS_KEY] = metrics or WebhookMetrics()
    for path, handler in (routes if routes is not None else default_routes()).items():
        app.router.add_post(path, _admission_view(path, handler))
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    add_visibility_routes(app)  # answers once app[webhooks.visibility.VISIBILITY_KEY] is set
    return app


class WebhookServer:
    """Runs the app on one HTTPS port; ``start``/``stop`` or ``async with``; reloads TLS files."""

    def __init__(
        self,
        cache: ObjectCache,
        ssl_context: ssl.SSLContext,
        *,
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        routes: Mapping[str, Handler] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        reloader: CertificateReloader | None = None,
        shutdown_timeout: float = 10.0,
    ) -> None:
        self.cache = cache
        self.ssl_context = ssl_context
        self.host = host
        self.port = port
        self.reloader = reloader
        self.shutdown_timeout = shutdown_timeout
        self.metrics = WebhookMetrics()
        self._serving = False

        def tls_serving() -> bool:
            return self._serving

        self.app = create_app(
            cache, routes=routes, metrics=self.metrics, max_body_bytes=max_body_bytes, ready_checks=[tls_serving]
        )
        self._runner: web.AppRunner | None = None
        self._reload_task: asyncio.Task[None] | None = None

    async def start(self) -> int:
        """Start serving; returns the bound port (useful with port 0)."""
        self._runner = web.AppRunner(
            self.app, handle_signals=False, access_log=None, shutdown_timeout=self.shutdown_timeout
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.ssl_context)
        await site.start()
        addresses = self._runner.addresses
        if addresses:
            self.port = int(addresses[0][1])
        if self.reloader is not None:
            self._reload_task = asyncio.create_task(self.reloader.run(), name="tls-reload")
        self._serving = True
        log.info("admission webhook serving HTTPS on %s:%d", self.host, self.port)
        return self.port

    async def stop(self) -> None:
        """Stop accepting, let in-flight requests finish (up to shutdown_timeout), close."""
        self._serving = False
        if self._reload_task is not None:
            self._reload_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reload_task
            self._reload_task = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> WebhookServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
