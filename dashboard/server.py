"""The dashboard's HTTP server (aiohttp): pages, their data as JSON, and event streams.

Pages are rendered on the server; a request with ``X-Fragment: content`` gets only the page's
main part (what ``dashboard.js`` swaps in when the data changes, or when a filter or a drill-down
link is followed without reloading). Every response says how long the server took
(``Server-Timing: render;dur=MS``). Writes exist only where the CLI handed in a quota writer.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from dashboard.data import DashboardData
from dashboard.respond import DATA_KEY, POLL_KEY, STREAMS_KEY, VERSION_AT_START
from dashboard.routes_jobs import add_job_routes
from dashboard.routes_pages import add_page_routes
from dashboard.streams import StreamRegistry, change_feed

STATIC = Path(__file__).parent / "static"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def server_timing(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    request[VERSION_AT_START] = request.app[DATA_KEY].version()
    response = await handler(request)
    if not response.prepared:
        response.headers["Server-Timing"] = f"render;dur={(time.perf_counter() - started) * 1000:.1f}"
    return response


async def events(request: web.Request) -> web.StreamResponse:
    data = request.app[DATA_KEY]
    return await change_feed(request, request.app[STREAMS_KEY], data.version, request.app[POLL_KEY])


def build_app(data: DashboardData, *, poll_seconds: float = 0.3) -> web.Application:
    app = web.Application(middlewares=[server_timing])
    app[DATA_KEY] = data
    app[STREAMS_KEY] = StreamRegistry()
    app[POLL_KEY] = poll_seconds

    async def end_streams(app: web.Application) -> None:
        await app[STREAMS_KEY].close_all()
        await data.layouts.close()

    app.on_shutdown.append(end_streams)
    app.router.add_get("/", home)
    app.router.add_get("/events", events)
    add_page_routes(app)
    add_job_routes(app)
    app.router.add_static("/static/", STATIC)
    return app


async def home(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/queues")


class DashboardServer:
    """``await server.start()`` serves ``build_app(data)`` on ``host:port`` (0: a free port)."""

    def __init__(
        self, data: DashboardData, *, host: str = "127.0.0.1", port: int = 0, poll_seconds: float = 0.3
    ) -> None:
        self.data = data
        self.app = build_app(data, poll_seconds=poll_seconds)
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        await self.data.warm()
        # handler_cancellation: a stream whose browser went away ends at once
        runner = web.AppRunner(
            self.app, access_log=None, handle_signals=False, handler_cancellation=True, shutdown_timeout=1.0
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
