"""Calling admission webhooks as kube-apiserver does: AdmissionReview v1 over HTTPS.

For a create, update or delete of a resource, ``Admission.admit`` reads the webhook
configurations from the store, calls every matching mutating webhook in order (applying each
``JSONPatch`` response to the object the next one sees), then every matching validating webhook
with the final object. A denial becomes the error the real server returns —
``admission webhook "NAME" denied the request: MESSAGE``, code from the response's status
(400 when it gives none or less) — and a webhook that cannot be called (refused connection,
timeout past ``timeoutSeconds``, TLS failure against ``caBundle``, an answer that is not a
review) fails the request with 500 under ``failurePolicy: Fail`` and is skipped under
``Ignore``. Warnings from every webhook are returned for the ``Warning`` response header.

``clientConfig.service`` is resolved through ``services`` (namespace, name, port → host:port):
the sandbox registers where trainyard's webhook listens, and the TLS server name checked is the
Service's DNS name, ``NAME.NAMESPACE.svc``, as in a cluster.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import ssl
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import jsonpatch

from .errors import ApiError
from .kinds import Registry, ResourceType
from .store import Store
from .webhook_config import Webhook, WebhookConfigError, WebhookType, parse_webhooks

log = logging.getLogger(__name__)

ADMISSION_API_VERSION = "admission.k8s.io/v1"
WEBHOOK_TYPES: tuple[WebhookType, ...] = ("Mutating", "Validating")
SANDBOX_USER = {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}


class WebhookCallError(Exception):
    """The webhook could not be called or answered nonsense (the failure policy decides)."""


@dataclass
class AdmissionResult:
    obj: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AdmissionCall:
    """One webhook call, kept for tests and the demo (``Admission.calls``)."""

    webhook: str
    operation: str
    resource: str
    allowed: bool | None  # None: the call failed
    ignored: bool = False


class Admission:
    """The admission chain of one API server; ``services`` maps Service references to addresses."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self.services: dict[tuple[str, str, int], str] = {}
        self.calls: list[AdmissionCall] = []
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes | None, ssl.SSLContext] = {}
        self._parsed: dict[WebhookType, tuple[tuple[str, ...], list[Webhook]]] = {}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ------------------------------------------------------------------ which webhooks

    def _configured(self, kind: WebhookType) -> list[Webhook]:
        rtype = self.registry.by_kind("admissionregistration.k8s.io/v1", f"{kind}WebhookConfiguration")
        if rtype is None:
            return []
        configurations = sorted(self.store.items(rtype), key=lambda c: str(c["metadata"]["name"]))
        # parsed once per version of the configurations: every write asks, few change them
        versions = tuple(str(c["metadata"].get("resourceVersion")) for c in configurations)
        cached = self._parsed.get(kind)
        if cached is not None and cached[0] == versions:
            return cached[1]
        found: list[Webhook] = []
        for configuration in configurations:
            try:
                found.extend(parse_webhooks(kind, configuration))
            except WebhookConfigError as error:
                # the real server refuses such objects at create; here they are skipped, loudly
                log.warning("skipping an unusable webhook configuration: %s", error)
        self._parsed[kind] = (versions, found)
        return found

    def _namespace_labels(
        self, rtype: ResourceType, namespace: str | None, obj: Mapping[str, Any]
    ) -> dict[str, str] | None:
        if (rtype.group, rtype.kind) == ("", "Namespace"):
            return dict((obj.get("metadata") or {}).get("labels") or {})
        if not rtype.namespaced or namespace is None:
            return None  # cluster-scoped: namespaceSelector does not apply
        namespaces = self.registry.by_kind("v1", "Namespace")
        if namespaces is None:
            return {}
        try:
            stored = self.store.get(namespaces, None, namespace)
        except ApiError:
            return {"kubernetes.io/metadata.name": namespace}
        return dict(stored["metadata"].get("labels") or {})

    def may_call(self, operation: str, rtype: ResourceType, subresource: str | None) -> bool:
        """Whether some webhook's rules match (selectors aside): the request needs ``admit``."""
        return any(
            rule.matches(operation, rtype, subresource)
            for kind in WEBHOOK_TYPES
            for webhook in self._configured(kind)
            for rule in webhook.rules
        )

    def matching(
        self,
        operation: str,
        rtype: ResourceType,
        namespace: str | None,
        subresource: str | None,
        obj: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None,
    ) -> tuple[list[Webhook], list[Webhook]]:
        """The mutating and the validating webhooks this request calls."""
        present = [o for o in (obj, old) if o is not None]
        labels = [dict((o.get("metadata") or {}).get("labels") or {}) for o in present] or [{}]
        namespace_labels = self._namespace_labels(rtype, namespace, present[0] if present else {})
        chosen: tuple[list[Webhook], list[Webhook]] = ([], [])
        for index, kind in enumerate(WEBHOOK_TYPES):
            for webhook in self._configured(kind):
                if webhook.matches(operation, rtype, subresource, namespace_labels, labels):
                    chosen[index].append(webhook)
        return chosen

    # --------------------------------------------------------------------------- admit

    async def admit(
        self,
        operation: str,
        rtype: ResourceType,
        namespace: str | None,
        name: str | None,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        check: Callable[[dict[str, Any]], object] | None = None,
    ) -> AdmissionResult:
        """Run the chain; the (possibly mutated) object, or ``ApiError`` on a denial or a failed call.

        ``check`` is the registry's own validation of the mutated object: it runs between the
        mutating and the validating webhooks (raising ``ApiError`` to refuse), as on the real server.
        """
        mutating, validating = self.matching(operation, rtype, namespace, subresource, obj, old)
        if dry_run:
            for webhook in (*mutating, *validating):
                if webhook.side_effects not in ("None", "NoneOnDryRun"):
                    raise ApiError.bad_request(
                        f'admission webhook "{webhook.name}" does not support dry run '
                        f"(sideEffects: {webhook.side_effects})"
                    )
        result = AdmissionResult(obj)
        for webhook in mutating:
            await self._call(webhook, operation, rtype, namespace, name, subresource, result, old, dry_run)
        if check is not None and result.obj is not None:
            check(result.obj)
        for webhook in validating:
            await self._call(webhook, operation, rtype, namespace, name, subresource, result, old, dry_run)
        return result

    async def _call(
        self,
        webhook: Webhook,
        operation: str,
        rtype: ResourceType,
        namespace: str | None,
        name: str | None,
        subresource: str | None,
        result: AdmissionResult,
        old: dict[str, Any] | None,
        dry_run: bool,
    ) -> None:
        uid = str(uuid.uuid4())
        request = _review_request(uid, operation, rtype, namespace, name, subresource, result.obj, old, dry_run)
        resource = rtype.qualified_plural
        try:
            response = await self._post(
                webhook, {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "request": request}, uid
            )
        except WebhookCallError as error:
            if webhook.failure_policy == "Ignore":
                log.warning("failed calling webhook %r (failurePolicy Ignore): %s", webhook.name, error)
                self.calls.append(AdmissionCall(webhook.name, operation, resource, None, ignored=True))
                return
            self.calls.append(AdmissionCall(webhook.name, operation, resource, None))
            raise ApiError(
                500,
                f'Internal error occurred: failed calling webhook "{webhook.name}": {error}',
                reason="InternalError",
            ) from None
        allowed = bool(response.get("allowed"))
        self.calls.append(AdmissionCall(webhook.name, operation, resource, allowed))
        result.warnings.extend(str(w) for w in response.get("warnings") or [])
        if not allowed:
            raise _denial(webhook.name, response.get("status") or {})
        _apply_patch(webhook, response, result)

    # ------------------------------------------------------------------------- transport

    def _context(self, bundle: bytes | None) -> ssl.SSLContext:
        context = self._contexts.get(bundle)
        if context is None:
            if bundle is None:
                context = ssl.create_default_context()
            else:
                try:
                    context = ssl.create_default_context(cadata=bundle.decode("ascii"))
                except (ssl.SSLError, UnicodeDecodeError, ValueError) as error:
                    raise WebhookCallError(f"caBundle holds no usable certificate: {error}") from None
            self._contexts[bundle] = context
        return context

    def _address(self, webhook: Webhook) -> tuple[str, str | None]:
        """The URL to post to and the TLS server name to check (None: the URL's host)."""
        if webhook.url is not None:
            return webhook.url, None
        assert webhook.service is not None
        namespace, name, port, path = webhook.service
        target = self.services.get((namespace, name, port))
        if target is None:
            raise WebhookCallError(
                f'failed to call webhook: service "{name}" in namespace "{namespace}" has no endpoints'
            )
        return f"https://{target}{path}", f"{name}.{namespace}.svc"

    async def _post(self, webhook: Webhook, review: dict[str, Any], uid: str) -> dict[str, Any]:
        url, server_name = self._address(webhook)
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with asyncio.timeout(webhook.timeout_seconds):
                async with self._session.post(
                    url,
                    data=json.dumps(review).encode(),
                    headers={"Content-Type": "application/json", "Accept": "application/json"},
                    ssl=self._context(webhook.ca_bundle),
                    server_hostname=server_name,
                ) as response:
                    body = await response.read()
                    if response.status != 200:
                        raise WebhookCallError(
                            f'failed to call webhook: Post "{url}": the server answered {response.status}: '
                            f"{body[:200].decode(errors='replace')}"
                        )
        except TimeoutError:
            raise WebhookCallError(
                f'failed to call webhook: Post "{url}": context deadline exceeded ({webhook.timeout_seconds:g}s)'
            ) from None
        except aiohttp.ClientError as error:
            raise WebhookCallError(f'failed to call webhook: Post "{url}": {error}') from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise WebhookCallError("received invalid webhook response: the body is not JSON") from None
        response_part = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response_part, dict):
            raise WebhookCallError("received invalid webhook response: no response in the AdmissionReview")
        if answer.get("apiVersion") != ADMISSION_API_VERSION or answer.get("kind") != "AdmissionReview":
            raise WebhookCallError(
                f"received invalid webhook response: expected {ADMISSION_API_VERSION} AdmissionReview, "
                f"got {answer.get('apiVersion')} {answer.get('kind')}"
            )
        if response_part.get("uid") != uid:
            raise WebhookCallError(f"received invalid webhook response: expected response.uid={uid!r}")
        return response_part


def _denial(name: str, status: Mapping[str, Any]) -> ApiError:
    """kube-apiserver's webhookerrors.ToStatusErr."""
    denied_by = f'admission webhook "{name}" denied the request'
    code = int(status.get("code") or 0)
    if code < 400:
        code = 400
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    error = ApiError(code, message, reason=str(status.get("reason") or ""))
    if status.get("details"):
        error.details = dict(status["details"])
    return error


def _review_request(
    uid: str,
    operation: str,
    rtype: ResourceType,
    namespace: str | None,
    name: str | None,
    subresource: str | None,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    dry_run: bool,
) -> dict[str, Any]:
    """The AdmissionReview's ``request``, as kube-apiserver fills it in."""
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": rtype.group, "version": rtype.version, "kind": rtype.kind},
        "resource": {"group": rtype.group, "version": rtype.version, "resource": rtype.plural},
        "requestKind": {"group": rtype.group, "version": rtype.version, "kind": rtype.kind},
        "requestResource": {"group": rtype.group, "version": rtype.version, "resource": rtype.plural},
        "name": name or "",
        "operation": operation,
        "userInfo": SANDBOX_USER,
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.capitalize()}Options"},
    }
    if namespace is not None:
        request["namespace"] = namespace
    if subresource is not None:
        request["subResource"] = subresource
    return request


def _apply_patch(webhook: Webhook, response: dict[str, Any], result: AdmissionResult) -> None:
    """A mutating webhook's JSONPatch applied to ``result.obj``; any other patch is the webhook's error."""
    patch = response.get("patch")
    if patch is None:
        return
    if webhook.type == "Validating":
        raise ApiError(500, f'Internal error occurred: validating webhook "{webhook.name}" returned a patch')
    if response.get("patchType") != "JSONPatch":
        raise ApiError(
            500,
            f'Internal error occurred: webhook "{webhook.name}" returned patchType {response.get("patchType")!r}',
        )
    try:
        operations = json.loads(base64.b64decode(str(patch), validate=True))
        result.obj = jsonpatch.apply_patch(result.obj, operations)
    except (binascii.Error, ValueError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
        raise ApiError(
            500, f'Internal error occurred: webhook "{webhook.name}" returned a patch that does not apply: {error}'
        ) from None
