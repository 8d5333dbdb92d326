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

import base64
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web
from multidict import MultiDict

from runtimes.k8s import wire

from . import bindings, tables
from .admission import Admission
from .admitted_writes import OPERATIONS, warning_headers, write_admitted
from .applied_writes import write_applied
from .bodies import decode_body, media_type
from .delete_answers import delete_answer
from .errors import ApiError
from .faults import Faults
from .health import health_answer, is_health_path
from .kinds import Registry, ResourceType
from .managed_fields import manager_of
from .ownership import default_propagation
from .patches import APPLY
from .pod_logs import pod_log
from .reads import discovery_document, list_objects
from .routes import Target, parse_target, request_verb
from .self_reviews import answer_review, is_review_path
from .store import DEFAULT_HISTORY, Store
from .tls import ServingCertificates
from .tls import generate as generate_certificates
from .watch_streams import serve_watch, truthy


class NewToken:
    """The default token: one drawn for each server (``secrets.token_urlsafe``), never the same twice."""


NEW_TOKEN = NewToken()


def bearer_matches(header: str | None, token: str) -> bool:
    """Whether an Authorization header carries ``token``, compared in constant time."""
    return hmac.compare_digest((header or "").encode("utf-8", "surrogateescape"), f"Bearer {token}".encode())


SEED_NAMESPACES = ("default", "kube-system")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    verb: str
    path: str
    query: dict[str, str]


def _propagation(options: Mapping[str, Any], query: Mapping[str, str]) -> str | None:
    """DeleteOptions' propagationPolicy (body or query), or the deprecated orphanDependents."""
    policy = options.get("propagationPolicy") or query.get("propagationPolicy")
    if policy:
        return str(policy)
    orphan = options.get("orphanDependents")
    if orphan is None and "orphanDependents" in query:
        orphan = truthy(query["orphanDependents"])
    if orphan is None:
        return None
    return "Orphan" if orphan else "Background"


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | MultiDict[str] | None = None) -> web.Response:
    return web.Response(body=wire.dumps(body), status=status, content_type="application/json", headers=headers)


class FakeApiServer:
    """``await start()`` → URL; ``store`` holds the objects, ``faults`` injects failures."""

    def __init__(
        self,
        *,
        registry: Registry | None = None,
        history_limit: int = DEFAULT_HISTORY,
        collect_dangling: bool = False,
        token: str | NewToken | None = NEW_TOKEN,
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
        self.token = secrets.token_urlsafe(32) if isinstance(token, NewToken) else token
        self.host = host
        self.port = port
        # tls: serve HTTPS with a CA generated now; its PEM goes into the kubeconfig
        self.certificates: ServingCertificates | None = generate_certificates() if tls else None
        self.requests: list[RecordedRequest] = []
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner: web.AppRunner | None = None
        self.stopping = False  # /readyz fails from the moment stop() begins
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
        self.stopping = True
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
            if "Authorization" not in request.headers and self._is_health(request):
                # anyone may read the health checks (system:public-info-viewer on the real server)
                return health_answer(request.path, request.query, lambda: self.stopping)
            return await self._serve(request)
        except ApiError as error:
            return _json(error.status(), error.code)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        """Authenticate, answer discovery, record the request, inject faults, then serve the verb."""
        if self.token is not None and not bearer_matches(request.headers.get("Authorization"), self.token):
            raise ApiError(401, "Unauthorized")
        path = request.path.rstrip("/") or "/"
        if self._is_health(request):
            return health_answer(path, request.query, lambda: self.stopping)
        if request.method == "POST" and is_review_path(path):
            return _json(answer_review(path, await self._body(request)), 201)
        found = discovery_document(self.registry, path) if request.method == "GET" else None
        if found is not None:
            return _json(found)
        query = dict(request.query)
        target = parse_target(self.registry, path)
        verb = request_verb(request.method, target, truthy(query.get("watch")))
        self.requests.append(RecordedRequest(request.method, verb, request.path, query))
        injected = self.faults.take(verb, request.path, query)
        if injected is not None:
            error, retry_after = injected
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
            return _json(error.status(), error.code, headers)
        if verb == "watch":
            return await serve_watch(self.store, request, target, query)
        if verb in ("list", "get"):
            answer = self._read(request, verb, target, query)
        elif verb == "delete":
            answer = await self._delete(request, target, query)
        else:
            answer = await self._write(request, verb, target, query)
        if self.faults.answer_lost(verb, request.path, query) and request.transport is not None:
            # served (a write committed), but the client never hears so: aiohttp's write of the
            # answer then meets the closed connection and drops it quietly
            request.transport.abort()
        return answer

    def _read(self, request: web.Request, verb: str, target: Target, query: Mapping[str, str]) -> web.Response:
        if target.subresource == "log":
            return pod_log(self.store, target, query)
        as_table = tables.wants_table(request.headers.get("Accept", ""))
        include = query.get("includeObject", "Metadata")
        if verb == "list":
            listed = list_objects(self.store, target, query)
            if as_table:
                return _json(tables.table(target.rtype, listed["items"], listed["metadata"], include))
            return _json(listed)
        found = self.store.get(target.rtype, target.namespace, str(target.name))
        if as_table:
            revision = {"resourceVersion": found["metadata"].get("resourceVersion", "")}
            return _json(tables.table(target.rtype, [found], revision, include))
        return _json(found)

    async def _delete(self, request: web.Request, target: Target, query: Mapping[str, str]) -> web.Response:
        rtype, namespace, name = target.rtype, target.namespace, str(target.name)
        dry_run = query.get("dryRun") == "All"
        options = await self._body(request, required=False)
        options = options if isinstance(options, dict) else {}
        propagation = _propagation(options, query)
        if self._admitted("delete", target):
            old = self.store.get(rtype, namespace, name)
            await self.admission.admit("DELETE", rtype, namespace, name, None, old, dry_run=dry_run)
        preconditions = options.get("preconditions")
        deleted = self.store.delete(rtype, namespace, name, preconditions, propagation=propagation, dry_run=dry_run)
        return _json(delete_answer(rtype, deleted, propagation or default_propagation(rtype)))

    async def _write(self, request: web.Request, verb: str, target: Target, query: Mapping[str, str]) -> web.Response:
        """create, update and patch (of the object, its ``/status``), and ``pods/binding``."""
        store, rtype, namespace, name = self.store, target.rtype, target.namespace, target.name
        assert name is not None or verb == "create"
        dry_run = query.get("dryRun") == "All"
        status = target.subresource == "status"
        body = await self._body(request)
        if target.subresource == "binding":
            if not isinstance(body, dict):
                raise ApiError.bad_request("the request body must be a JSON object")
            return _json(bindings.bind(store, rtype, str(namespace), str(name), body, dry_run=dry_run), 201)
        if verb in ("create", "update") and not isinstance(body, dict):
            raise ApiError.bad_request("the request body must be a JSON object")
        content_type = request.headers.get("Content-Type", "")
        if verb == "patch" and media_type(content_type) == APPLY:
            admission = self.admission if self._admitted("create", target) or self._admitted(verb, target) else None
            code, written, warnings = await write_applied(store, admission, target, body, query, dry_run=dry_run)
            return _json(written, code, warning_headers(warnings))
        manager = manager_of(query, request.headers.get("User-Agent", ""))
        if self._admitted(verb, target):
            code, written, warnings = await write_admitted(
                store, self.admission, verb, target, body, content_type, dry_run=dry_run, manager=manager
            )
            return _json(written, code, warning_headers(warnings))
        warnings = []
        if verb == "create":
            created = store.create(rtype, namespace, body, dry_run=dry_run, manager=manager, warnings=warnings)
            return _json(created, 201, warning_headers(warnings))
        if verb == "update":
            written = store.update(
                rtype, namespace, str(name), body, status=status, dry_run=dry_run, manager=manager, warnings=warnings
            )
            return _json(written, headers=warning_headers(warnings))
        patched = store.patch(
            rtype,
            namespace,
            str(name),
            content_type,
            body,
            status=status,
            dry_run=dry_run,
            manager=manager,
            warnings=warnings,
        )
        return _json(patched, headers=warning_headers(warnings))

    def _admitted(self, verb: str, target: Target) -> bool:
        """Whether any webhook's rules match this request (cheap: most requests skip admission)."""
        operation = OPERATIONS.get(verb)
        return operation is not None and self.admission.may_call(operation, target.rtype, target.subresource)

    @staticmethod
    def _is_health(request: web.Request) -> bool:
        return request.method == "GET" and is_health_path(request.path)

    @staticmethod
    async def _body(request: web.Request, *, required: bool = True) -> Any:
        raw = await request.read()
        if not raw:
            if required:
                raise ApiError.bad_request("the request has no body")
            return None
        return decode_body(raw, request.headers.get("Content-Type", ""))


async def start_fake_api(**kwargs: Any) -> FakeApiServer:
    server = FakeApiServer(**kwargs)
    await server.start()
    return server


__all__ = ["NEW_TOKEN", "FakeApiServer", "NewToken", "RecordedRequest", "bearer_matches", "start_fake_api"]
