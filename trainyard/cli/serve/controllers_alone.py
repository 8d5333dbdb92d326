"""`trainyard serve controller`: the controllers alone, with /metrics, /healthz and /readyz over plain HTTP."""

from __future__ import annotations

import argparse
import asyncio
import sys

from trainyard.cli.errors import UserError
from trainyard.cli.serve.cluster_connections import Controllers, stop_on_signals


async def serve_controller_alone(args: argparse.Namespace) -> int:
    from aiohttp import web
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    controllers = await Controllers.connect(args, registry)
    stop = asyncio.Event()

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        if controllers.service.manager.cache.synced.is_set():
            return web.Response(text="ok")
        unsynced = ", ".join(controllers.service.manager.unsynced())
        return web.Response(status=503, text=f"informers not synced: {unsynced}")

    app = web.Application()
    app.add_routes([web.get("/metrics", metrics), web.get("/healthz", healthz), web.get("/readyz", readyz)])
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    try:
        with stop_on_signals(stop):
            site = web.TCPSite(runner, args.host, args.metrics_port)
            try:
                await site.start()
            except OSError as error:
                raise UserError(f"cannot listen on {args.host}:{args.metrics_port}: {error.strerror}") from None
            port = runner.addresses[0][1] if runner.addresses else args.metrics_port
            print(f"trainyard serve: controller metrics on http://{args.host}:{port}/metrics", file=sys.stderr)
            controllers.start(stop)
            await stop.wait()
            return controllers.exit_code()
    finally:
        print("trainyard serve: shutting down", file=sys.stderr)
        await controllers.close()
        await runner.cleanup()
