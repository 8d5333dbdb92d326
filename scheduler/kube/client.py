"""``KubeClient``: the one small interface between trainyard and the API server.

Every kind goes through the same few calls — get, list, watch, create, replace, merge patch
(main resource or ``/status``), delete — on plain dicts, built on kubernetes-asyncio's
``ApiClient`` (its configuration, authentication and connection pool) without its generated
per-kind APIs. Errors come back as ``KubeApiError`` with the server's Status message; watch
streams are yielded line by line with an inactivity timeout, because a watch can go silent
without closing (kubernetes-asyncio issue #360).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
from kubernetes_asyncio import client

from runtimes.k8s import wire
from scheduler.kube.errors import KubeApiError, WatchExpired
from scheduler.kube.kinds import KubeKind, kind_named

# items per list request: client-go's informers page by 500 too
DEFAULT_PAGE_SIZE = 500
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class ObjectList:
    """A list answer: the items (with kind and apiVersion filled in) and the list's resourceVersion.

    ``pages`` counts the requests it took (more than one when the list was paged).
    """

    items: list[dict[str, Any]]
    resource_version: str
    pages: int = 1


@dataclass
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    object: dict[str, Any] = field(default_factory=dict)

    @property
    def resource_version(self) -> str | None:
        version = (self.object.get("metadata") or {}).get("resourceVersion")
        return str(version) if version is not None else None


class WatchInactive(Exception):
    """No line arrived on a watch stream within the inactivity timeout."""


def _namespace_of(document: dict[str, Any]) -> str | None:
    metadata = document.get("metadata") or {}
    namespace = metadata.get("namespace")
    return str(namespace) if namespace else None


class KubeClient:
    """Generic, dict-based access to any ``KubeKind`` through one kubernetes-asyncio ``ApiClient``.

    The client does not own the ``ApiClient``: whoever made it closes it.
    """

    def __init__(self, api_client: client.ApiClient, *, request_timeout: float = 30.0) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        response = await self._send(
            method,
            path,
            query or [],
            None if body is None else wire.dumps(body),
            content_type,
            aiohttp.ClientTimeout(total=self.request_timeout),
        )
        try:
            raw = await response.read()
        finally:
            response.release()
        if not 200 <= response.status <= 299:
            raise KubeApiError.from_body(response.status, raw, response.headers.get("Retry-After"))
        try:
            result = wire.loads_from_api_server(raw)
        except ValueError:
            result = None
        if not isinstance(result, dict):
            raise KubeApiError(0, "BadResponse", f"{method} {path} answered with no JSON object")
        return result

    async def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: bytes | None,
        content_type: str,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """One request on the ``ApiClient``'s connection pool, with its authentication.

        The body is encoded here, by ``runtimes.k8s.wire``: kubernetes-asyncio's own path walks
        every body through ``sanitize_for_serialization`` and encodes it with the json module,
        about a fifth of the CPU the controllers spent per write (py-spy, bench controller --real).
        """
        api = self.api_client
        headers = {"Accept": "application/json", **api.default_headers}
        if body is not None:
            headers["Content-Type"] = content_type
        query = list(query)
        await api.update_params_for_auth(headers, query, ["BearerToken"])
        url = (api.configuration.host or "") + path
        if query:
            url += "?" + urlencode(query)
        rest = api.rest_client
        extra: dict[str, Any] = {}
        if rest.proxy:
            extra["proxy"] = rest.proxy
            if rest.proxy_headers:
                extra["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            extra["server_hostname"] = rest.server_hostname
        response: aiohttp.ClientResponse = await rest.pool_manager.request(
            method, url, data=body, headers=headers, timeout=timeout, **extra
        )
        return response

    # ---------------------------------------------------------------------------- reads

    async def get(self, kind: str | KubeKind, name: str, namespace: str | None = None) -> dict[str, Any]:
        k = kind_named(kind)
        return self._complete(k, await self._call("GET", k.path(namespace, name)))

    async def list(
        self,
        kind: str | KubeKind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = DEFAULT_PAGE_SIZE,
    ) -> ObjectList:
        """Every matching object, fetched ``limit`` at a time (``None``: one unpaged request).

        The pages are one consistent list at the first page's resourceVersion. When the server
        says the continue token expired (410: compaction passed it), the list starts over
        unpaged, as client-go's pager falls back to a full list.
        """
        k = kind_named(kind)
        selectors = [("labelSelector", label_selector)] if label_selector else []
        if field_selector:
            selectors.append(("fieldSelector", field_selector))
        items: builtins.list[dict[str, Any]] = []
        resource_version: str | None = None
        token: str | None = None
        pages = 0
        while True:
            query = list(selectors)
            if limit is not None:
                query.append(("limit", str(limit)))
            if token:
                query.append(("continue", token))
            try:
                answer = await self._call("GET", k.path(namespace), query=query)
            except KubeApiError as error:
                if error.status != 410 or not token:
                    raise
                items, resource_version, token, limit = [], None, None, None
                continue
            pages += 1
            items.extend(self._complete(k, item) for item in answer.get("items") or [])
            metadata = answer.get("metadata") or {}
            if resource_version is None:
                resource_version = str(metadata.get("resourceVersion", ""))
            token = metadata.get("continue") or None
            if not token:
                return ObjectList(items, resource_version, pages)

    async def watch(
        self,
        kind: str | KubeKind,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        inactivity_timeout: float = 330.0,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Events from a watch until the server ends the stream.

        Raises ``WatchExpired`` on 410 (list again), ``KubeApiError`` on other errors and
        ``WatchInactive`` when no line arrives for ``inactivity_timeout`` seconds.
        """
        k = kind_named(kind)
        query = [("watch", "true"), ("timeoutSeconds", str(timeout_seconds)), ("allowWatchBookmarks", "true")]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        # no total or read timeout: the stream is long; inactivity is timed below
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout)
        response = await self._send("GET", k.path(namespace), query, None, "application/json", timeout)
        try:
            if response.status != 200:
                raise KubeApiError.from_body(
                    response.status, await response.read(), response.headers.get("Retry-After")
                )
            while True:
                try:
                    # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
                    # arrives as a line does, and the informer would never stop
                    async with asyncio.timeout(inactivity_timeout):
                        line = await response.content.readline()
                except TimeoutError:
                    raise WatchInactive(f"no event on the {k.kind} watch for {inactivity_timeout:g}s") from None
                if not line:
                    return
                if line.strip():
                    yield self._watch_event(k, line)
        finally:
            response.release()

    def _watch_event(self, k: KubeKind, line: bytes) -> WatchEvent:
        """One line of a watch stream; an ERROR event is raised (410 as ``WatchExpired``)."""
        event = wire.loads_from_api_server(line)
        event_type = str(event.get("type", ""))
        obj = event.get("object")
        if event_type == "ERROR":
            error = KubeApiError.from_status(obj)
            if error.status == 410:
                raise WatchExpired(error.status, error.reason, error.message)
            raise error
        if not isinstance(obj, dict):
            raise KubeApiError(0, "BadResponse", f"watch event without an object: {line[:200]!r}")
        return WatchEvent(event_type, obj if event_type == "BOOKMARK" else self._complete(k, obj))

    # --------------------------------------------------------------------------- writes

    async def create(self, document: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        k = self._kind_of(document)
        ns = (namespace or _namespace_of(document)) if k.namespaced else None
        if k.namespaced and ns is None:
            raise ValueError(f"{k.kind} {document.get('metadata', {}).get('name')!r} needs metadata.namespace")
        return self._complete(k, await self._call("POST", k.path(ns), body=document))

    async def replace(self, document: dict[str, Any], *, status: bool = False) -> dict[str, Any]:
        """PUT the whole object (or its ``/status``); its metadata.resourceVersion makes it conditional."""
        k = self._kind_of(document)
        name = str((document.get("metadata") or {}).get("name", ""))
        path = k.path(_namespace_of(document) if k.namespaced else None, name, "status" if status else None)
        return self._complete(k, await self._call("PUT", path, body=document))

    async def patch(
        self,
        kind: str | KubeKind,
        name: str,
        patch: dict[str, Any] | builtins.list[dict[str, Any]],
        namespace: str | None = None,
        *,
        status: bool = False,
    ) -> dict[str, Any]:
        """A JSON merge patch (a dict) or a JSON patch (a list), on the object or its ``/status``."""
        k = kind_named(kind)
        content_type = JSON_PATCH if isinstance(patch, list) else MERGE_PATCH
        path = k.path(namespace, name, "status" if status else None)
        return self._complete(k, await self._call("PATCH", path, body=patch, content_type=content_type))

    async def delete(
        self,
        kind: str | KubeKind,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
    ) -> dict[str, Any]:
        """Delete; ``propagation_policy`` is Background, Foreground or Orphan (None: the kind's default)."""
        k = kind_named(kind)
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if resource_version is not None:
            body["preconditions"] = {"resourceVersion": resource_version}
        if propagation_policy is not None:
            body["propagationPolicy"] = propagation_policy
        return await self._call("DELETE", k.path(namespace, name), body=body)

    async def bind_pod(self, name: str, namespace: str, node: str) -> None:
        """Bind a pod to a node through the ``pods/binding`` subresource, as kube-scheduler does."""
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        await self._call("POST", kind_named("Pod").path(namespace, name, "binding"), body=binding)

    # -------------------------------------------------------------------------- helpers

    @staticmethod
    def _kind_of(document: dict[str, Any]) -> KubeKind:
        k = kind_named(str(document.get("kind", "")))
        if document.get("apiVersion") != k.api_version:
            raise ValueError(
                f"{k.kind} has apiVersion {document.get('apiVersion')!r}; trainyard writes {k.api_version}"
            )
        return k

    @staticmethod
    def _complete(k: KubeKind, document: dict[str, Any]) -> dict[str, Any]:
        # Items of built-in lists come without kind and apiVersion; feeds need both.
        document.setdefault("apiVersion", k.api_version)
        document.setdefault("kind", k.kind)
        return document
