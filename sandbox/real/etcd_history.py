"""Every committed write of some custom resources, read from etcd itself, in commit order.

An audit that must not be fooled by what it audits reads the store, not the API server: here
etcd's own watch (through its JSON gateway, ``POST /v3/watch``) of the keys kube-apiserver
stores a resource under (``/registry/<group>/<plural>/<namespace>/<name>``), from a revision on,
with each deletion's previous value. Custom resources are stored as JSON, so each event is the
object as committed. No fault of a proxy in front of kube-apiserver can hide a write from it,
and it sees each revision once, in order.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from typing import Any

import aiohttp

# (group, plural) → the kind the audit knows it as
Watched = dict[tuple[str, str], str]
Record = Callable[[str, str, dict[str, Any]], None]  # (kind, ADDED|MODIFIED|DELETED, object)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def current_revision(etcd_url: str) -> int:
    async with aiohttp.ClientSession() as session:
        body = {"key": _b64("/registry/"), "range_end": _b64("/registry0"), "count_only": True}
        async with session.post(f"{etcd_url}/v3/kv/range", json=body) as response:
            answer = await response.json()
    return int(answer["header"]["revision"])


async def follow(etcd_url: str, watched: Watched, record: Record, start_revision: int) -> None:
    """Feed ``record`` every write to the watched resources from ``start_revision`` on, until cancelled."""
    streams = [
        asyncio.create_task(_follow_one(etcd_url, group, plural, kind, record, start_revision))
        for (group, plural), kind in watched.items()
    ]
    try:
        await asyncio.gather(*streams)
    finally:
        for stream in streams:
            stream.cancel()
        await asyncio.gather(*streams, return_exceptions=True)


async def _follow_one(etcd_url: str, group: str, plural: str, kind: str, record: Record, start: int) -> None:
    prefix = f"/registry/{group}/{plural}/"
    request = {
        "create_request": {
            "key": _b64(prefix),
            "range_end": _b64(prefix[:-1] + "0"),  # every key under the prefix
            "start_revision": str(start),
            "prev_kv": True,
        }
    }
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(f"{etcd_url}/v3/watch", json=request) as response,
    ):
        async for line in response.content:
            if line.strip():
                _record_events(json.loads(line), kind, record)


def _record_events(message: dict[str, Any], kind: str, record: Record) -> None:
    for event in (message.get("result") or {}).get("events") or ():
        if event.get("type") == "DELETE":
            previous = event.get("prev_kv") or {}
            if previous.get("value"):
                record(kind, "DELETED", json.loads(base64.b64decode(previous["value"])))
            continue
        kv = event.get("kv") or {}
        change = "ADDED" if kv.get("version") == "1" else "MODIFIED"
        record(kind, change, json.loads(base64.b64decode(kv["value"])))
