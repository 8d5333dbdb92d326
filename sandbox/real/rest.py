"""A small synchronous Kubernetes REST client for setting a cluster up: discovery and server-side apply.

Bringing the real cluster up happens before any event loop runs (and from pytest's session
fixtures), so this speaks plain HTTPS with the standard library: ``apply(document)`` sends one
server-side apply (``application/apply-patch+yaml``, field manager ``trainyard-sandbox``,
forced), which creates or updates any kind the server serves; ``RestMapper`` finds a kind's
resource path by discovery, re-reading a group once when a CRD has just been added.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FIELD_MANAGER = "trainyard-sandbox"


class RestError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


@dataclass(frozen=True)
class ResourcePath:
    plural: str
    namespaced: bool
    group_version: str

    def collection(self, namespace: str | None) -> str:
        prefix = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced:
            return f"{prefix}/namespaces/{namespace or 'default'}/{self.plural}"
        return f"{prefix}/{self.plural}"


class RestClient:
    def __init__(self, server: str, token: str, ca_pem: bytes | None) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cadata=ca_pem.decode() if ca_pem else None)
        self.mapper = RestMapper(self)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> Any:
        request = urllib.request.Request(self.server + path, data=body, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if body is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            with contextlib.suppress(json.JSONDecodeError, AttributeError):
                detail = json.loads(detail).get("message", detail)
            raise RestError(error.code, f"{method} {path}: {detail}") from None
        return json.loads(payload) if payload else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def apply(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply of one object (create or update); its ``status`` is applied too where given."""
        api_version = str(document["apiVersion"])
        kind = str(document["kind"])
        metadata = document.get("metadata") or {}
        resource = self.mapper.resource(api_version, kind)
        path = f"{resource.collection(metadata.get('namespace'))}/{metadata['name']}"
        query = f"?fieldManager={FIELD_MANAGER}&force=true"
        body = json.dumps(dict(document)).encode()
        applied: dict[str, Any] = self.request("PATCH", path + query, body, "application/apply-patch+yaml")
        if document.get("status") and kind not in ("CustomResourceDefinition",):
            applied = self.request("PATCH", f"{path}/status{query}", body, "application/apply-patch+yaml")
        return applied

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        resource = self.mapper.resource(api_version, kind)
        try:
            self.request("DELETE", f"{resource.collection(namespace)}/{name}")
        except RestError as error:
            if error.status != 404:
                raise


class RestMapper:
    """apiVersion + kind → resource path, from the server's discovery documents."""

    def __init__(self, client: RestClient) -> None:
        self.client = client
        self._known: dict[tuple[str, str], ResourcePath] = {}

    def resource(self, api_version: str, kind: str) -> ResourcePath:
        key = (api_version, kind)
        if key not in self._known:
            self._discover(api_version)
        if key not in self._known:
            raise RestError(404, f"the server serves no {kind} in {api_version}")
        return self._known[key]

    def _discover(self, api_version: str) -> None:
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            listing = self.client.get(path)
        except RestError as error:
            if error.status == 404:
                return
            raise
        for resource in listing.get("resources", ()):
            if "/" in resource["name"]:
                continue  # a subresource
            self._known[(api_version, resource["kind"])] = ResourcePath(
                resource["name"], bool(resource["namespaced"]), api_version
            )
