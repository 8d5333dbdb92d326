"""The admission webhook server: aiohttp over HTTPS, AdmissionReview admission.k8s.io/v1.

The server never answers 500. A body that cannot be a review gets HTTP 400 (or 413 past the size
limit, 408 when it is not sent in time) with a message; a review whose handler fails gets a
*denying* AdmissionReview from ``deny_on_error`` middleware, so the API server shows the user that
the review failed and the server keeps serving. The caller learns nothing of the server's insides
(no exception, no address): the details go to the log, with a traceback the first time a failure
is seen. An object nested deeper than any reviewed kind is refused naming where.

Small reviews are judged inline on the event loop, large ones on a worker thread with a deadline
(``webhooks.review_runner``), so health probes, other reviews and the controllers sharing the
loop go on while a large one is judged. Every connection is bounded in time
(``webhooks.connections``): TLS handshake, headers, body, keep-alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from runtimes.k8s import wire
from webhooks.connections import (
    BODY_READ_TIMEOUT,
    KEEPALIVE_TIMEOUT,
    LINGER_TIME,
    TLS_HANDSHAKE_TIMEOUT,
    HandshakeBoundSite,
)
from webhooks.handlers import Handler
from webhooks.metrics import WebhookMetrics
from webhooks.objects import ObjectCache
from webhooks.review import (
    MAX_OBJECT_DEPTH,
    AdmissionRequest,
    BadReview,
    Verdict,
    build_response,
    parse_review,
    too_deep,
)
from webhooks.review_runner import ReviewRunner, deadline_refusal
from webhooks.tls import CertificateReloader
from webhooks.visibility import add_visibility_routes

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's own request limit is 3 MiB
DEFAULT_PORT = 9443

CACHE_KEY = web.AppKey("cache", ObjectCache)
METRICS_KEY = web.AppKey("metrics", WebhookMetrics)
READY_KEY = web.AppKey("ready", list[Callable[[], bool]])
RUNNER_KEY = web.AppKey("review_runner", ReviewRunner)
BODY_TIMEOUT_KEY = web.AppKey("body_read_timeout", float)
TRACED_KEY = web.AppKey("traced_failures", set[tuple[str, str, int]])
INTERNAL_ERROR = "trainyard webhook could not evaluate this request (an internal error; its log has the details)"
_LOGGED_TRACEBACKS = 256  # distinct failures whose traceback is logged once each

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


def _log_failure(traced: set[tuple[str, str, int]], endpoint: str, error: Exception) -> None:
    """One line per failed request; the traceback only the first time a failure (its exception type
    and where it was raised) is seen, so a caller repeating a failing request cannot flood the log."""
    frames = traceback.extract_tb(error.__traceback__)
    where = (frames[-1].filename, frames[-1].lineno or 0) if frames else ("", 0)
    signature = (type(error).__name__, *where)
    if signature in traced or len(traced) >= _LOGGED_TRACEBACKS:
        log.error("admission handler for %s failed: %s: %s", endpoint, type(error).__name__, str(error)[:500])
        return
    traced.add(signature)
    log.error("admission handler for %s failed", endpoint, exc_info=error)


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
        _log_failure(request.app[TRACED_KEY], endpoint, error)
        metrics = request.app[METRICS_KEY]
        started = request.get(_STARTED, time.perf_counter())
        metrics.observe(endpoint, "error", time.perf_counter() - started)
        uid = request.get(_UID)
        if uid is None:
            return _bad_request(INTERNAL_ERROR)
        verdict = Verdict.deny(INTERNAL_ERROR, code=500, reason="InternalError")
        return _json(build_response(uid, verdict))


async def _read_arriving_body(request: web.Request) -> bytes:
    """The body of a request whose body is still arriving, within the app's body read timeout."""
    async with asyncio.timeout(request.app[BODY_TIMEOUT_KEY]):
        return await request.read()


def _too_deep_refusal(review: AdmissionRequest) -> Verdict | None:
    """After a handler failed: a refusal naming where the object nests too deep, if it does."""
    for field, document in (("request.object", review.object), ("request.oldObject", review.old_object)):
        where = too_deep(document) if document is not None else None
        if where is not None:
            shown = where if len(where) <= 80 else where[:80] + "..."
            return Verdict.deny(
                f"{field} nests maps and lists more than {MAX_OBJECT_DEPTH} levels deep (at {shown}): "
                f"no {review.kind} field is that deep; remove or flatten that field",
                code=400,
                reason="BadRequest",
            )
    return None


async def _judge(
    app: web.Application, handler: Handler, review: AdmissionRequest, size: int, started: float
) -> Verdict:
    runner, cache = app[RUNNER_KEY], app[CACHE_KEY]
    try:
        if runner.runs_inline(size):
            return handler(review, cache)
        verdict = await runner.judge_on_worker(handler, review, cache, started=started)
    except Exception:
        refusal = _too_deep_refusal(review)
        if refusal is None:
            raise
        return refusal
    return deadline_refusal(review, runner.deadline) if verdict is None else verdict


def _admission_view(endpoint: str, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def admit(request: web.Request) -> web.Response:
        started = time.perf_counter()
        request[_ENDPOINT] = endpoint
        request[_STARTED] = started
        app = request.app
        metrics = app[METRICS_KEY]
        try:
            # a body received whole (the API server sends it at once) is read without a timer
            body = await request.read() if request.content.is_eof() else await _read_arriving_body(request)
        except web.HTTPRequestEntityTooLarge as too_large:
            metrics.observe(endpoint, "error", time.perf_counter() - started)
            return _bad_request(
                f"request body is larger than this webhook accepts ({too_large.text}); "
                "the limit is set with --max-body-bytes",
                413,
            )
        except TimeoutError:
            metrics.observe(endpoint, "error", time.perf_counter() - started)
            slow = _bad_request(f"request body not received within {app[BODY_TIMEOUT_KEY]:g}s", 408)
            slow.force_close()  # a caller this slow gets no second request on this connection
            return slow
        try:
            review = parse_review(body)
        except BadReview as bad:
            metrics.observe(endpoint, "error", time.perf_counter() - started)
            if bad.uid is None:
                return _bad_request(f"not an AdmissionReview: {bad.message}")
            verdict = Verdict.deny(f"malformed AdmissionReview: {bad.message}", code=400, reason="BadRequest")
            return _json(build_response(bad.uid, verdict))
        request[_UID] = review.uid
        verdict = await _judge(app, handler, review, len(body), started)
        document = build_response(review.uid, verdict)
        outcome = "allowed" if verdict.allowed else "timeout" if verdict.reason == "Timeout" else "denied"
        metrics.observe(endpoint, outcome, time.perf_counter() - started)
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
    runner: ReviewRunner | None = None,
    body_read_timeout: float = BODY_READ_TIMEOUT,
) -> web.Application:
    """The aiohttp application: admission endpoints plus /healthz, /readyz and /metrics."""
    app = web.Application(middlewares=[deny_on_error], client_max_size=max_body_bytes)
    app[CACHE_KEY] = cache

    def objects_loaded() -> bool:
        return cache.loaded

    app[READY_KEY] = [objects_loaded, *(ready_checks or [])]
    app[METRICS_KEY] = metrics or WebhookMetrics()
    app[RUNNER_KEY] = review_runner = runner or ReviewRunner()
    app[BODY_TIMEOUT_KEY] = body_read_timeout
    app[TRACED_KEY] = set()

    async def close_runner(_: web.Application) -> None:
        review_runner.close()

    app.on_cleanup.append(close_runner)
    for path, handler in (routes if routes is not None else default_routes()).items():
        app.router.add_post(path, _admission_view(path, handler))
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    add_visibility_routes(app)  # answers once app[webhooks.visibility.VISIBILITY_KEY] is set
    return app


@dataclass(frozen=True)
class ConnectionLimits:
    """How long each step of a connection may take (``webhooks.connections``)."""

    tls_handshake: float = TLS_HANDSHAKE_TIMEOUT
    keepalive: float = KEEPALIVE_TIMEOUT
    body_read: float = BODY_READ_TIMEOUT
    linger: float = LINGER_TIME


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
        runner: ReviewRunner | None = None,
        limits: ConnectionLimits = ConnectionLimits(),
    ) -> None:
        self.cache = cache
        self.ssl_context = ssl_context
        self.host = host
        self.port = port
        self.reloader = reloader
        self.shutdown_timeout = shutdown_timeout
        self.limits = limits
        self.metrics = WebhookMetrics()
        self._serving = False

        def tls_serving() -> bool:
            return self._serving

        self.app = create_app(
            cache,
            routes=routes,
            metrics=self.metrics,
            max_body_bytes=max_body_bytes,
            ready_checks=[tls_serving],
            runner=runner,
            body_read_timeout=limits.body_read,
        )
        self._runner: web.AppRunner | None = None
        self._reload_task: asyncio.Task[None] | None = None

    async def start(self) -> int:
        """Start serving; returns the bound port (useful with port 0)."""
        self._runner = web.AppRunner(
            self.app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=self.shutdown_timeout,
            keepalive_timeout=self.limits.keepalive,
            lingering_time=self.limits.linger,
        )
        await self._runner.setup()
        site = HandshakeBoundSite(
            self._runner,
            self.host,
            self.port,
            ssl_context=self.ssl_context,
            handshake_timeout=self.limits.tls_handshake,
        )
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
