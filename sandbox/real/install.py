"""trainyard installed on a real cluster from its own manifests, as `kubectl apply -k manifests/install` would.

``service_documents()`` reads the kustomization's resources (following ``../webhook``) and keeps
what a cluster of processes can hold: the Namespace, ServiceAccount, RBAC and Service. The
Deployment and its disruption budget are left out (the service runs as a process here, not a
Pod) and so is cert-manager's Certificate (the CA is generated instead). The webhook
configurations are registered once the webhook serves, pointed at its URL on loopback with the
real caBundle (``webhook_configurations``). ``service_account_kubeconfig`` mints a token for
trainyard's ServiceAccount through the TokenRequest API, so the controllers run with exactly the
rights the manifests grant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .control_plane import MANIFESTS
from .loopback import webhook_to_url
from .pki import write_kubeconfig
from .rest import RestClient

SERVICE_NAMESPACE = "trainyard-system"
SERVICE_ACCOUNT = "trainyard-webhook"  # manifests/webhook/rbac.yaml: the one account every replica runs as
# What a process cannot be, or what is made another way here.
_LEFT_OUT = {"Deployment", "PodDisruptionBudget", "Certificate", "Issuer"}


def kustomization_documents(folder: Path) -> list[dict[str, Any]]:
    """The documents of a kustomization's ``resources`` (files and folders, recursively); patches are not applied."""
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    documents: list[dict[str, Any]] = []
    for resource in kustomization.get("resources") or ():
        path = (folder / resource).resolve()
        if path.is_dir():
            documents.extend(kustomization_documents(path))
        else:
            documents.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return documents


def service_documents(install: Path = MANIFESTS / "install") -> list[dict[str, Any]]:
    """The service's Namespace, ServiceAccount, RBAC and Service from the install manifests."""
    return [
        d
        for d in kustomization_documents(install)
        if d.get("kind") not in _LEFT_OUT and not d.get("kind", "").endswith("WebhookConfiguration")
    ]


def webhook_configurations(port: int, ca_pem: bytes, webhook: Path = MANIFESTS / "webhook") -> list[dict[str, Any]]:
    """manifests/webhook's configurations, calling trainyard's webhook at 127.0.0.1:``port``."""
    return [
        webhook_to_url(d, "trainyard", port, ca_pem)
        for d in kustomization_documents(webhook)
        if d.get("kind", "").endswith("WebhookConfiguration")
    ]


def service_account_kubeconfig(
    admin: RestClient,
    path: Path,
    server: str,
    ca_pem: bytes,
    *,
    namespace: str = SERVICE_NAMESPACE,
    name: str = SERVICE_ACCOUNT,
    seconds: int = 24 * 3600,
) -> Path:
    """A kubeconfig holding a fresh token of ServiceAccount ``namespace/name`` (TokenRequest)."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}
    answer = admin.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", json.dumps(request).encode()
    )
    return write_kubeconfig(path, server, ca_pem, answer["status"]["token"], name=f"{namespace}-{name}")
