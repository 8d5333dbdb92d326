"""A fake kube-apiserver on aiohttp, served over real HTTP on loopback.

It speaks enough of the protocol for the real kubernetes-asyncio client (CoreV1Api,
CustomObjectsApi, CoordinationV1Api, ``watch.Watch``): discovery, create (201), get, list
(with the list's resourceVersion, label and field selectors), PUT with optimistic concurrency,
merge and JSON patch, the ``/status`` subresource, delete (finalizers, preconditions), and
watch streams (chunked newline-delimited JSON events, resume from a resourceVersion, 410 as an
ERROR event once the history no longer reaches back, ``timeoutSeconds``). Requests need the
bearer token written into the kubeconfig, so a client that loses its credentials fails here too.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web
from multidict import MultiDict

from . import bindings, discovery, openapi, tables
from .admission import Admission
from .admitted_writes import OPERATIONS, warning_headers, write_admitted
from .errors import ApiError
from .faults import Faults
from .kinds import Registry, ResourceType
from .paging import parse_limit
from .records import StoredEvent, Subscription
from .routes import Target, parse_target, request_verb
from .selectors import parse_field_selector, parse_label_selector
from .store import DEFAULT_HISTORY, Store
from .tls import ServingCertificates
from .tls import generate as generate_certificates

DEFAULT_TOKEN = "trainyard-fake-token"
Render = Callable[[dict[str, Any]], dict[str, Any]]
SEED_NAMESPACES = ("default", "kube-system")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    verb: str
    path: str
    query: dict[str, str]


def _truthy(value: str | None) -> bool:
    # kubernetes-asyncio sends watch=True; the real server parses booleans like Go's ParseBool
    return value is not None and value.lower() in ("true", "1", "t")


def _propagation(options: Mapping[str, Any], query: Mapping[str, str]) -> str | None:
    """DeleteOptions' propagationPolicy (body or query), or the deprecated orphanDependents."""
    policy = options.get("propagationPolicy") or query.get("propagationPolicy")
    if policy:
        return str(policy)
    orphan = options.get("orphanDependents")
    if orphan is None and "orphanDependents" in query:
        orphan = _truthy(query["orphanDependents"])
    if orphan is None:
        return None
    return "Orphan" if orphan else "Background"


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | MultiDict[str] | None = None) -> web.Response:
    return web.Response(body=json.dumps(body).encode(), status=status, content_type="application/json", headers=headers)


class FakeApiServer:
    """``await start()`` → URL; ``store`` holds the objects, ``faults`` injects failures."""

    def __init__(
        self,
        *,
        registry: Registry | None = None,
        history_limit: int = DEFAULT_HISTORY,
        collect_dangling: bool = False,
        token: str | None = DEFAULT_TOKEN,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = False,
    ) -> None:
        self.registry = registry or Registry()
        # collect_dangling: objects created with owners that do not exist are deleted, as the real
        # garbage collector does; off by default so tests may use made-up owner uids
        self.store = Store(history_limit, collect_dangling=collect_dangling)
        self.faults = Faults(self.store)
        # admission webhooks from the stored Mutating/ValidatingWebhookConfigurations; register
        # Service addresses in ``admission.services``
        self.admission = Admission(self.store, self.registry)
        self.token = token
        self.host = host
        self.port = port
        # tls: serve HTTPS with a CA generated now; its PEM goes into the kubeconfig
        self.certificates: ServingCertificates | None = generate_certificates() if tls else None
        self.requests: list[RecordedRequest] = []
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner: web.AppRunner | None = None
        namespaces = self.registry.by_kind("v1", "Namespace")
        for name in SEED_NAMESPACES if namespaces is not None else ():
            assert namespaces is not None
            self.store.create(namespaces, None, {"metadata": {"name": name}})

    @property
    def url(self) -> str:
        scheme = "https" if self.certificates is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    async def start(self) -> str:
        # handler_cancellation: a watch whose client went away ends at once instead of at its next event
        self._runner = web.AppRunner(
            self.app, handle_signals=False, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await self._runner.setup()
        context = self.certificates.server_context() if self.certificates is not None else None
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=context)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self.url

    async def stop(self) -> None:
        for subscription in list(self.store.subscriptions):
            subscription.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.admission.close()

    async def __aenter__(self) -> FakeApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def write_kubeconfig(self, path: Path, *, namespace: str = "default", name: str = "fake") -> Path:
        """A kubeconfig whose current context (``name``) points at this server with its bearer token.

        Over HTTPS the cluster entry carries the generated CA as ``certificate-authority-data``.
        The file is written owner-only (it holds the token), as kubectl writes its own.
        """
        user: dict[str, Any] = {"token": self.token} if self.token else {}
        cluster: dict[str, Any] = {"server": self.url}
        if self.certificates is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.certificates.ca_pem).decode("ascii")
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": cluster}],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
            "current-context": name,
        }
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_text(yaml.safe_dump(config))
        return path

    # ------------------------------------------------------------ direct access for tests

    def type_of(self, api_version: str, kind: str) -> ResourceType:
        rtype = self.registry.by_kind(api_version, kind)
        if rtype is None:
            raise KeyError(f"the fake API server does not serve {api_version} {kind}")
        return rtype

    def seed(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object without HTTP (it still gets a revision and a watch event)."""
        rtype = self.type_of(str(obj.get("apiVersion")), str(obj.get("kind")))
        namespace = (obj.get("metadata") or {}).get("namespace") if rtype.namespaced else None
        return self.store.create(rtype, namespace or ("default" if rtype.namespaced else None), obj)

    # -------------------------------------------------------------------------- serving

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._serve(request)
        except ApiError as error:
            return _json(error.status(), error.code)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            raise ApiError(401, "Unauthorized")
        path = request.path.rstrip("/") or "/"
        found = self._discovery(path) if request.method == "GET" else None
        if found is not None:
            return _json(found)
        query = dict(request.query)
        target = parse_target(self.registry, path)
        watch = _truthy(query.get("watch"))
        verb = request_verb(request.method, target, watch)
        self.requests.append(RecordedRequest(request.method, verb, request.path, query))
        injected = self.faults.take(verb, request.path, query)
        if injected is not None:
            error, retry_after = injected
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
            return _json(error.status(), error.code, headers)
        dry_run = query.get("dryRun") == "All"
        status = target.subresource == "status"
        store, rtype, namespace, name = self.store, target.rtype, target.namespace, target.name
        if verb == "watch":
            return await self._watch(request, target, query)
        as_table = tables.wants_table(request.headers.get("Accept", ""))
        include = query.get("includeObject", "Metadata")
        if verb == "list":
            listed = self._list(target, query)
            if as_table:
                return _json(tables.table(rtype, listed["items"], listed["metadata"], include))
            return _json(listed)
        assert name is not None or verb == "create"
        if verb == "get":
            found = store.get(rtype, namespace, str(name))
            if as_table:
                revision = {"resourceVersion": found["metadata"].get("resourceVersion", "")}
                return _json(tables.table(rtype, [found], revision, include))
            return _json(found)
        if verb == "delete":
            options = await self._body(request, required=False)
            options = options if isinstance(options, dict) else {}
            propagation = _propagation(options, query)
            if self._admitted(verb, target):
                old = store.get(rtype, namespace, str(name))
                await self.admission.admit("DELETE", rtype, namespace, str(name), None, old, dry_run=dry_run)
            return _json(
                store.delete(
                    rtype, namespace, str(name), options.get("preconditions"), propagation=propagation, dry_run=dry_run
                )
            )
        body = await self._body(request)
        if target.subresource == "binding":
            if not isinstance(body, dict):
                raise ApiError.bad_request("the request body must be a JSON object")
            return _json(bindings.bind(store, rtype, str(namespace), str(name), body, dry_run=dry_run), 201)
        if verb in ("create", "update") and not isinstance(body, dict):
            raise ApiError.bad_request("the request body must be a JSON object")
        if self._admitted(verb, target):
            content_type = request.headers.get("Content-Type", "")
            code, written, warnings = await write_admitted(
                self.store, self.admission, verb, target, body, content_type, dry_run=dry_run
            )
            return _json(written, code, warning_headers(warnings))
        if verb == "create":
            return _json(store.create(rtype, namespace, body, dry_run=dry_run), 201)
        if verb == "update":
            return _json(store.update(rtype, namespace, str(name), body, status=status, dry_run=dry_run))
        content_type = request.headers.get("Content-Type", "")
        return _json(store.patch(rtype, namespace, str(name), content_type, body, status=status, dry_run=dry_run))

    # ------------------------------------------------------------------------ admission

    def _admitted(self, verb: str, target: Target) -> bool:
        """Whether any webhook's rules match this request (cheap: most requests skip admission)."""
        operation = OPERATIONS.get(verb)
        return operation is not None and self.admission.may_call(operation, target.rtype, target.subresource)

    def _list(self, target: Target, query: Mapping[str, str]) -> dict[str, Any]:
        rtype = target.rtype
        filtered = bool(query.get("labelSelector") or query.get("fieldSelector"))
        page = self.store.list_page(
            rtype,
            target.namespace,
            self._matcher(rtype, query),
            limit=parse_limit(query.get("limit")),
            continue_token=query.get("continue") or None,
            count_remaining=not filtered,
        )
        if not rtype.custom:
            # built-in list items carry no kind/apiVersion, as on the real server
            for item in page.items:
                item.pop("kind", None)
                item.pop("apiVersion", None)
        metadata: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
        if page.continue_token is not None:
            metadata["continue"] = page.continue_token
        if page.remaining_item_count is not None:
            metadata["remainingItemCount"] = page.remaining_item_count
        return {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": metadata, "items": page.items}

    def _discovery(self, path: str) -> dict[str, Any] | None:
        parts = [p for p in path.split("/") if p]
        if parts == ["version"]:
            return discovery.version_info()
        if parts == ["api"]:
            return discovery.core_versions()
        if len(parts) == 2 and parts[0] == "api":
            return discovery.resource_list(self.registry, "", parts[1]) or self._missing()
        if parts == ["apis"]:
            return discovery.group_list(self.registry)
        if len(parts) == 2 and parts[0] == "apis":
            return discovery.group(self.registry, parts[1]) or self._missing()
        if len(parts) == 3 and parts[0] == "apis":
            return discovery.resource_list(self.registry, parts[1], parts[2]) or self._missing()
        if parts[:2] == ["openapi", "v3"]:
            return self._openapi(parts[2:])
        return None

    def _openapi(self, parts: list[str]) -> dict[str, Any]:
        if not parts:
            return openapi.root(self.registry)
        if len(parts) == 2 and parts[0] == "api":
            return openapi.document(self.registry, "", parts[1]) or self._missing()
        if len(parts) == 3 and parts[0] == "apis":
            return openapi.document(self.registry, parts[1], parts[2]) or self._missing()
        return self._missing()

    @staticmethod
    def _missing() -> dict[str, Any]:
        raise ApiError(404, "the server could not find the requested resource")

    @staticmethod
    async def _body(request: web.Request, *, required: bool = True) -> Any:
        raw = await request.read()
        if not raw:
            if required:
                raise ApiError.bad_request("the request has no body")
            return None
        try:
            return json.loads(raw)
        except ValueError as error:
            raise ApiError.bad_request(f"the request body is not JSON: {error}") from None

    @staticmethod
    def _matcher(rtype: ResourceType, query: Mapping[str, str]) -> Callable[[Mapping[str, Any]], bool]:
        labels_match = parse_label_selector(query.get("labelSelector"))
        fields_match = parse_field_selector(query.get("fieldSelector"), rtype.field_selectors)

        def matches(obj: Mapping[str, Any]) -> bool:
            metadata = obj.get("metadata") or {}
            return labels_match(metadata.get("labels") or {}) and fields_match(obj)

        return matches

    # ---------------------------------------------------------------------------- watch

    async def _watch(self, request: web.Request, target: Target, query: Mapping[str, str]) -> web.StreamResponse:
        matches = self._matcher(target.rtype, query)
        render = (
            self._table_renderer(target.rtype, query) if tables.wants_table(request.headers.get("Accept", "")) else None
        )
        timeout: float | None = None
        if query.get("timeoutSeconds"):
            try:
                timeout = float(query["timeoutSeconds"])
            except ValueError:
                raise ApiError.bad_request(f"invalid timeoutSeconds {query['timeoutSeconds']!r}") from None
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            backlog, subscription = self.store.subscribe(target.rtype, target.namespace, query.get("resourceVersion"))
        except ApiError as error:
            await self._send(response, {"type": "ERROR", "object": error.status()})
            return response
        try:
            await self._stream(request, response, target.rtype, subscription, backlog, matches, timeout, query, render)
        except (ConnectionResetError, ConnectionError):
            pass  # the client went away
        finally:
            self.store.unsubscribe(subscription)
        return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        rtype: ResourceType,
        subscription: Subscription,
        backlog: list[StoredEvent],
        matches: Callable[[Mapping[str, Any]], bool],
        timeout: float | None,
        query: Mapping[str, str],
        render: Render | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        for replayed in backlog:
            await self._send_event(response, replayed, matches, render)
        while True:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):  # not wait_for: it can swallow a cancellation on 3.11
                    event = await subscription.queue.get()
            except TimeoutError:
                break
            if event is None:
                if subscription.abrupt and request.transport is not None:
                    request.transport.abort()
                    raise ConnectionResetError("watch cut by an injected fault")
                return
            if not subscription.stalled:
                await self._send_event(response, event, matches, render)
        if _truthy(query.get("allowWatchBookmarks")) and not subscription.stalled:
            bookmark = {
                "kind": rtype.kind,
                "apiVersion": rtype.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
            }
            await self._send(response, {"type": "BOOKMARK", "object": bookmark})

    async def _send_event(
        self,
        response: web.StreamResponse,
        event: StoredEvent,
        matches: Callable[[Mapping[str, Any]], bool],
        render: Render | None = None,
    ) -> None:
        # With a selector, an object that starts or stops matching is ADDED or DELETED for this watch.
        now = matches(event.obj)
        before = matches(event.old) if event.old is not None else False
        event_type = event.type
        if event.type == "MODIFIED":
            if not now and not before:
                return
            if now and not before:
                event_type = "ADDED"
            elif before and not now:
                event_type = "DELETED"
        elif not now:
            return
        await self._send(response, {"type": event_type, "object": render(event.obj) if render else event.obj})

    @staticmethod
    def _table_renderer(rtype: ResourceType, query: Mapping[str, str]) -> Render:
        """``kubectl get -w``: each event's object is a one-row Table."""
        include = query.get("includeObject", "Metadata")

        def render(obj: dict[str, Any]) -> dict[str, Any]:
            revision = {"resourceVersion": str((obj.get("metadata") or {}).get("resourceVersion", ""))}
            return tables.table(rtype, [obj], revision, include)

        return render

    @staticmethod
    async def _send(response: web.StreamResponse, event: Mapping[str, Any]) -> None:
        await response.write(json.dumps(event).encode() + b"\n")


async def start_fake_api(**kwargs: Any) -> FakeApiServer:
    server = FakeApiServer(**kwargs)
    await server.start()
    return server


__all__ = ["DEFAULT_TOKEN", "FakeApiServer", "RecordedRequest", "start_fake_api"]
