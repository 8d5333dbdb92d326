"""A fault-injecting proxy in front of the real kube-apiserver: the chaos of ``sandbox.apiserver.faults``
for a server whose code we cannot touch.

Clients talk plain HTTP to the proxy on loopback, with their own bearer token; the proxy
forwards every request over HTTPS (watches streamed line by line) and, while ``random(rate,
...)`` is on, answers a share of them itself, as a misbehaving server or network would:

- ``conflict``: 409 Conflict on an update or patch, not forwarded;
- ``throttle``: 429 with Retry-After; ``server-error``: 500 or 503, not forwarded;
- ``drop``: every watch stream open through the proxy is cut;
- ``expire``: the history is "compacted": open watches end, and every watch or paged list that
  resumes from a resourceVersion the proxy had already passed on gets 410 Expired (as after
  etcd compaction), at most once per ``compaction_interval`` seconds;
- ``answer-lost``: a write is forwarded (it commits) and the connection is cut before the answer.

The fault kinds and their names are the embedded server's (``sandbox.apiserver.faults``), so
``bench chaos`` runs the same way against either; ``injected`` counts them.
"""

from __future__ import annotations

import base64
import json
import random
import ssl
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from sandbox.apiserver.faults import (
    CONFLICT,
    DROP,
    EXPIRE,
    FAULT_KINDS,
    LOST,
    OPT_IN_KINDS,
    SERVER_ERROR,
    THROTTLE,
    Chaos,
)

_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "content-encoding"}
_WRITES = {"POST", "PUT", "PATCH", "DELETE"}


@dataclass
class FaultProxy:
    upstream: str
    ca_pem: bytes
    injected: Counter[str] = field(default_factory=Counter)
    port: int = 0
    _chaos: Chaos | None = None
    _expired_through: int = 0  # resourceVersions up to this one are "compacted"
    _latest_seen: int = 0
    _streams: dict[int, web.Request] = field(default_factory=dict)  # the watches open through the proxy, by id
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> str:
        context = ssl.create_default_context(cadata=self.ca_pem.decode())
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context, limit=0), timeout=aiohttp.ClientTimeout(total=None)
        )
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        return self.url

    async def stop(self) -> None:
        self._cut_streams()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def random(
        self, rate: float, seed: int = 0, kinds: Iterable[str] = FAULT_KINDS, *, compaction_interval: float = 0.0
    ) -> None:
        chosen = tuple(kinds)
        unknown = sorted(set(chosen) - set(FAULT_KINDS) - set(OPT_IN_KINDS))
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; use some of {list(FAULT_KINDS + OPT_IN_KINDS)}")
        self._chaos = (
            Chaos(rate, chosen, random.Random(seed), compaction_interval=compaction_interval)
            if rate > 0 and chosen
            else None
        )

    def calm(self) -> None:
        self._chaos = None

    # -------------------------------------------------------------------------- serving

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        watch = request.query.get("watch") in ("true", "1")
        resumed = _resumed_from(request)
        if resumed is not None and 0 < resumed <= self._expired_through:
            self.injected["expired-answer"] += 1
            return _status(410, "Expired", "too old resource version (history compacted: injected)")
        kind = self._draw(request.method, watch)
        if kind in (CONFLICT, THROTTLE, SERVER_ERROR):
            return self._refuse(kind)
        answer = await self._forward(request, watch=watch and kind != LOST)
        if kind == LOST and request.transport is not None:
            # served (the write committed upstream), but the client never hears so: the write of
            # the answer meets the closed connection and is dropped quietly
            request.transport.abort()
        return answer

    def _draw(self, method: str, watch: bool) -> str | None:
        if self._chaos is None:
            return None
        kind = self._chaos.draw(updates=method in ("PUT", "PATCH"), writes=method in _WRITES)
        if kind is None:
            return None
        if kind == EXPIRE:
            self._expired_through = self._latest_seen
            self._cut_streams()
        elif kind == DROP:
            self._cut_streams()
        self.injected[kind] += 1
        return kind if kind in (CONFLICT, THROTTLE, SERVER_ERROR, LOST) else None

    def _refuse(self, kind: str) -> web.Response:
        if kind == CONFLICT:
            return _status(409, "Conflict", "the object has been modified; please apply your changes (injected)")
        if kind == THROTTLE:
            response = _status(429, "TooManyRequests", "too many requests, please try again later (injected)")
            response.headers["Retry-After"] = "1"
            return response
        code = 500 if self._chaos is None or self._chaos.rng.random() < 0.5 else 503
        return _status(code, "InternalError" if code == 500 else "ServiceUnavailable", f"injected {code}")

    def _cut_streams(self) -> None:
        """Cut the connection of every watch open through the proxy (the client sees it drop)."""
        for watching in list(self._streams.values()):
            if watching.transport is not None:
                watching.transport.abort()
        self._streams.clear()

    async def _forward(self, request: web.Request, *, watch: bool) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        body = await request.read() if request.can_read_body else None
        upstream = await self._session.request(
            request.method, self.upstream + request.path_qs, headers=headers, data=body, allow_redirects=False
        )
        try:
            if not watch or upstream.status != 200:
                payload = await upstream.read()
                self._note_versions(payload)
                return web.Response(body=payload, status=upstream.status, headers=_answer_headers(upstream))
            stream = web.StreamResponse(status=200, headers=_answer_headers(upstream))
            await stream.prepare(request)
            self._streams[id(request)] = request
            try:
                async for line in upstream.content:
                    self._note_versions(line)
                    await stream.write(line)
            except (ConnectionResetError, aiohttp.ClientError):
                pass  # the client's side was cut (a drop) or the upstream ended
            finally:
                self._streams.pop(id(request), None)
            return stream
        finally:
            upstream.release()

    def _note_versions(self, payload: bytes) -> None:
        """The newest resourceVersion passed on (watch events' objects, lists' metadata)."""
        try:
            document = json.loads(payload)
        except ValueError:
            return
        if not isinstance(document, dict):
            return
        holder = document.get("object") if "object" in document else document
        version = ((holder or {}).get("metadata") or {}).get("resourceVersion")
        if isinstance(version, str) and version.isdigit():
            self._latest_seen = max(self._latest_seen, int(version))


def _resumed_from(request: web.Request) -> int | None:
    """The resourceVersion a watch resumes from, or a paged list continues from (0: none)."""
    if request.method != "GET":
        return None
    version = request.query.get("resourceVersion", "")
    if request.query.get("watch") in ("true", "1") and version.isdigit():
        return int(version)
    token = request.query.get("continue")
    if token:
        try:
            decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            return int(decoded.get("rv", 0))
        except (ValueError, TypeError):
            return 0
    return None


def _answer_headers(upstream: aiohttp.ClientResponse) -> dict[str, str]:
    return {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS}


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.json_response(body, status=code)
