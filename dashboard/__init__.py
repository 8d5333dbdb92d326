"""The web dashboard: queues, jobs, the GPU topology and simulation runs, in a browser, live.

It owns the pages and their server (aiohttp, Server-Sent Events for live updates, charts drawn
in the browser from JSON by a small hand-written script: no front-end library, no build step).
It computes nothing the engine or the queue queries already compute: every figure comes from
``scheduler.queues`` (the functions behind `trainyard queues` and the visibility API), the
engine's public names, ``scheduler.topology`` and ``simulations``' own output. It never imports
the CLI, the webhooks or the sandbox; the CLI wires it to a cluster, files or the controllers
(``trainyard dashboard``, ``trainyard serve --dashboard-port``, ``trainyard sandbox up``).

``DashboardData`` is what the pages read, ``DashboardServer`` serves them.
"""

from dashboard.cluster_access import ClusterAccess
from dashboard.data import DashboardData, QuotaWriter
from dashboard.server import DashboardServer, build_app
from dashboard.sources import (
    WATCHED_KINDS,
    CachedQueues,
    ChangeCounter,
    ObjectReader,
    QueueSource,
    StaticQueues,
    parse_documents,
)

__all__ = [
    "WATCHED_KINDS",
    "CachedQueues",
    "ChangeCounter",
    "ClusterAccess",
    "DashboardData",
    "DashboardServer",
    "ObjectReader",
    "QueueSource",
    "QuotaWriter",
    "StaticQueues",
    "build_app",
    "parse_documents",
]
