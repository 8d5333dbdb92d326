"""What every handler shares: the application's keys and how a page becomes a response."""

from __future__ import annotations

from aiohttp import web

from dashboard.data import DashboardData
from dashboard.html import Html
from dashboard.pages.layout import Page, shell
from dashboard.streams import StreamRegistry

DATA_KEY = web.AppKey("dashboard-data", DashboardData)
STREAMS_KEY = web.AppKey("dashboard-streams", StreamRegistry)
POLL_KEY = web.AppKey("dashboard-poll", float)
# the data version before the page was built (what it shows is at least that fresh)
VERSION_AT_START = web.RequestKey("dashboard-version-at-start", int)


def render(request: web.Request, page: Page, status: int = 200, *, stale: bool = False) -> web.Response:
    """The whole page, or with ``X-Fragment`` only its main part (what live pages swap in)."""
    data = request.app[DATA_KEY]
    # a page built on data older than the latest says so (version 0): the feed's next word refreshes it
    version = 0 if stale or data.stale() else request.get(VERSION_AT_START, data.version())
    body: Html = page.content if request.headers.get("X-Fragment") else shell(page, data.label, version)
    response = web.Response(text=body, content_type="text/html", charset="utf-8", status=status)
    # what the page shows is at least this fresh: a live page refreshes when the feed says otherwise
    response.headers["X-Data-Version"] = str(version)
    return response


def query(request: web.Request) -> dict[str, str]:
    return {key: request.query[key] for key in request.query}
