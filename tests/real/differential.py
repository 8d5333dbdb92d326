"""The differential harness: one request sequence sent to two API servers, the answers compared.

A ``Sequence`` is a list of ``Step``s (method, path, body, content type) in a namespace of its
own; ``{ns}`` in a path or body is that namespace, ``{rv:STEP}`` the resourceVersion a
previous step's answer carried. A step may read a watch stream for a few events instead of one
answer, or compact the server's history (``COMPACT``: etcd's compaction on the real server, the
store's on the embedded one) so that what follows meets 410 as after compaction. ``Server``
sends raw HTTPS with a bearer token (no client library between the two, so a difference is the
servers'). ``normalize`` removes what is bound to differ between any two servers (uids,
resourceVersions, timestamps, generated names' suffixes, the managedFields' times, a 410's
current revision), and ``compare`` walks both answers field by field, the warnings' texts
included, and returns each difference as ``(step, path, embedded, real)``.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
VOLATILE_METADATA = ("uid", "resourceVersion", "creationTimestamp", "selfLink")
TOO_OLD = re.compile(r"too old resource version: (\d+) \(\d+\)")
COMPACT = "COMPACT"  # a step's method: compact the server's history instead of sending a request


@dataclass(frozen=True)
class Step:
    name: str
    method: str
    path: str
    body: Any = None
    content_type: str = "application/json"
    watch_events: int = 0  # > 0: a watch; read this many events (or until the stream ends)
    pause: float = 0.0  # seconds to wait before sending (for a controller to act)


@dataclass(frozen=True)
class Sequence:
    name: str
    steps: tuple[Step, ...]
    setup: tuple[Step, ...] = ()  # sent, answers not compared


@dataclass
class Answer:
    status: int
    body: Any
    warnings: list[str] = field(default_factory=list)


class Server:
    """One API server reached over HTTPS with a bearer token; ``compact`` forgets its history."""

    def __init__(
        self, name: str, url: str, token: str, ca_pem: bytes, compact: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self.name = name
        self.url = url.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cadata=ca_pem.decode()) if ca_pem else None
        self.compact = compact
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Server:
        self._session = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"},
            connector=aiohttp.TCPConnector(ssl=self.context if self.context is not None else True),
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def send(self, step: Step, path: str, body: Any) -> Answer:
        assert self._session is not None
        if step.method == COMPACT:
            assert self.compact is not None, f"{self.name} cannot compact its history"
            await self.compact()
            return Answer(200, None)
        data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
        headers = {"Content-Type": step.content_type} if data is not None else {}
        async with self._session.request(step.method, self.url + path, data=data, headers=headers) as response:
            warnings = response.headers.getall("Warning", [])
            if step.watch_events:
                return Answer(response.status, await _read_events(response, step.watch_events), warnings)
            text = await response.text()
            try:
                parsed: Any = json.loads(text) if text else None
            except json.JSONDecodeError:
                parsed = text
            return Answer(response.status, parsed, warnings)


async def compact_etcd(etcd_url: str) -> None:
    """Compact etcd at its current revision through its JSON gateway (what kube-apiserver does
    every five minutes): every earlier revision is gone, so resuming from one is 410."""
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{etcd_url}/v3/kv/range", json={"key": "AA==", "limit": 1}) as response:
            revision = int((await response.json())["header"]["revision"])
        async with session.post(f"{etcd_url}/v3/kv/compaction", json={"revision": revision, "physical": True}) as done:
            done.raise_for_status()


async def _read_events(response: aiohttp.ClientResponse, count: int) -> list[Any]:
    if response.status != 200:
        text = await response.text()
        return [json.loads(text)] if text.startswith("{") else [text]
    events: list[Any] = []
    try:
        async with asyncio.timeout(10):
            while len(events) < count:
                line = await response.content.readline()
                if not line:
                    break
                if line.strip():
                    events.append(json.loads(line))
    except TimeoutError:
        events.append("(no more events within 10 s)")
    return events


def substitute(text: str, namespace: str, seen: Mapping[str, str]) -> str:
    """``{ns}``, and ``{rv:STEP}`` / ``{uid:STEP}`` from what an earlier step's answer carried."""
    text = text.replace("{ns}", namespace)
    return re.sub(r"\{(rv|uid):([a-z0-9-]+)\}", lambda m: seen.get(f"{m.group(1)}:{m.group(2)}", "0"), text)


async def run_sequence(server: Server, sequence: Sequence, namespace: str) -> dict[str, Answer]:
    """Send a sequence's setup and steps; the answer of each step by name."""
    seen: dict[str, str] = {}
    answers: dict[str, Answer] = {}
    for step in (*sequence.setup, *sequence.steps):
        if step.pause:
            await asyncio.sleep(step.pause)
        path = substitute(step.path, namespace, seen)
        body = step.body
        if body is not None:
            raw = body if isinstance(body, str) else json.dumps(body)
            body = substitute(raw, namespace, seen)
        answer = await server.send(step, path, body)
        metadata = answer.body.get("metadata") if isinstance(answer.body, dict) else None
        if isinstance(metadata, dict):
            for key, field_name in (("rv", "resourceVersion"), ("uid", "uid")):
                if field_name in metadata:
                    seen[f"{key}:{step.name}"] = str(metadata[field_name])
        answers[step.name] = answer
    return answers


def normalize(value: Any, namespace: str, key: str = "") -> Any:
    """``value`` without what any two servers give differently (see the module docstring)."""
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for k, v in value.items():
            if (key == "metadata" and k in VOLATILE_METADATA) or (k == "uid" and v):
                found[k] = "<set>"
                continue
            if key == "metadata" and k == "managedFields":
                found[k] = sorted(
                    f"{e.get('manager')}/{e.get('operation')}/{e.get('subresource', '')}" for e in v or ()
                )
                continue
            if k == "continue" and v:
                found[k] = "<token>"
                continue
            found[k] = normalize(v, namespace, k)
        return found
    if isinstance(value, list):
        return [normalize(v, namespace, key) for v in value]
    if isinstance(value, str):
        if TIME.match(value):
            return "<time>"
        return TOO_OLD.sub(r"too old resource version: \1 (<current>)", value.replace(namespace, "{ns}"))
    return value


def compare(embedded: Any, real: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Every place where two normalized answers differ: (field path, embedded's, real's)."""
    if isinstance(embedded, dict) and isinstance(real, dict):
        found = []
        for key in sorted(set(embedded) | set(real)):
            found.extend(compare(embedded.get(key, "<absent>"), real.get(key, "<absent>"), f"{path}.{key}"))
        return found
    if isinstance(embedded, list) and isinstance(real, list) and len(embedded) == len(real):
        found = []
        for index, (a, b) in enumerate(zip(embedded, real, strict=True)):
            found.extend(compare(a, b, f"{path}[{index}]"))
        return found
    return [] if embedded == real else [(path or ".", embedded, real)]


@dataclass(frozen=True)
class Difference:
    sequence: str
    step: str
    path: str
    embedded: Any
    real: Any

    @property
    def key(self) -> str:
        return f"{self.sequence}/{self.step}:{self.path}"


def differences(
    sequence: Sequence, embedded: dict[str, Answer], real: dict[str, Answer], namespaces: tuple[str, str]
) -> list[Difference]:
    found: list[Difference] = []
    for step in sequence.steps:
        a, b = embedded[step.name], real[step.name]
        left = {
            "status": a.status,
            "body": normalize(a.body, namespaces[0]),
            "warnings": normalize(a.warnings, namespaces[0]),
        }
        right = {
            "status": b.status,
            "body": normalize(b.body, namespaces[1]),
            "warnings": normalize(b.warnings, namespaces[1]),
        }
        for path, x, y in compare(left, right):
            found.append(Difference(sequence.name, step.name, path, x, y))
    return found
