"""How long a connection to the webhook may take over each step, so no caller can hold one open.

The webhook fails closed (``failurePolicy: Fail``): if its connections run out, no TrainJob can
be created anywhere. Every step a caller controls is bounded:

- the TLS handshake: ``TLS_HANDSHAKE_TIMEOUT`` (asyncio's own default is 60 s, and aiohttp's
  ``TCPSite`` does not expose it, hence ``HandshakeBoundSite``);
- a request's headers, and the idle time between requests: aiohttp closes a connection whose
  next request has not fully arrived when its keep-alive timer fires, ``KEEPALIVE_TIMEOUT`` after
  the connection opened or its last response (aiohttp's default is over an hour);
- a request's body: ``BODY_READ_TIMEOUT``, applied where the admission view reads it; after an
  answer sent before the body was read (408, 413), the rest is read and dropped for at most
  ``LINGER_TIME`` (aiohttp's default is 10 s), then the connection is closed.
"""

from __future__ import annotations

import asyncio
import ssl

from aiohttp import web

TLS_HANDSHAKE_TIMEOUT = 10.0
KEEPALIVE_TIMEOUT = 30.0  # the API server reuses its connections well within this
BODY_READ_TIMEOUT = 10.0
LINGER_TIME = 2.0


class HandshakeBoundSite(web.BaseSite):
    """An HTTPS listener on ``host:port`` whose TLS handshakes must finish within ``handshake_timeout``."""

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext,
        handshake_timeout: float = TLS_HANDSHAKE_TIMEOUT,
        backlog: int = 128,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context, backlog=backlog)
        self._host = host
        self._port = port
        self._handshake_timeout = handshake_timeout

    @property
    def name(self) -> str:
        return f"https://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None, "the runner is set up before its sites start"
        self._server = await asyncio.get_running_loop().create_server(
            server,
            self._host,
            self._port,
            ssl=self._ssl_context,
            backlog=self._backlog,
            ssl_handshake_timeout=self._handshake_timeout,
        )
