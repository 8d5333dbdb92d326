"""trainyard's admission webhook served on loopback for a local cluster, and its registration.

``SandboxWebhook`` runs the real ``webhooks`` app over HTTPS, fed by informers on the local API
server; ``webhook_configurations`` are manifests/webhook's Mutating and Validating
configurations with the webhook's CA in ``caBundle``, which the sandbox API server reads to
call it as a real API server would. ``LocalCluster.start_webhook`` puts the two together.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import tempfile
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s_client

from scheduler.kube import InformerSettings, KubeClient, load_api_client

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
WEBHOOK_SERVICE = ("trainyard-system", "trainyard-webhook", 443)  # as manifests/webhook names it


def webhook_configurations(ca_pem: bytes) -> list[dict[str, Any]]:
    """trainyard's manifests/webhook configurations with ``caBundle`` set to ``ca_pem``."""
    path = MANIFESTS / "webhook" / "webhook-configurations.yaml"
    documents = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    bundle = base64.b64encode(ca_pem).decode("ascii")
    for document in documents:
        for webhook in document.get("webhooks") or []:
            webhook["clientConfig"]["caBundle"] = bundle
    return documents


class SandboxWebhook:
    """trainyard's admission webhook (``webhooks.server``) over HTTPS on loopback, fed from a cluster.

    Its certificate names the Service manifests/webhook declares (``trainyard-webhook.
    trainyard-system.svc``), which is the name the sandbox API server checks when it calls it.
    """

    def __init__(self, kubeconfig: Path, informer_settings: InformerSettings) -> None:
        self.kubeconfig = kubeconfig
        self.informer_settings = informer_settings
        self.port = 0
        self.ca_pem = b""
        self._server: Any = None
        self._group: Any = None
        self._task: asyncio.Task[None] | None = None
        self._api_client: k8s_client.ApiClient | None = None

    async def start(self, timeout: float = 30.0) -> None:
        from scheduler.kube import InformerGroup
        from webhooks.objects import CACHED_KINDS, ObjectCache
        from webhooks.server import WebhookServer
        from webhooks.tls import self_signed, service_hosts

        namespace, name, _ = WEBHOOK_SERVICE
        bundle = self_signed(service_hosts(name, namespace))
        self.ca_pem = bundle.ca.cert_pem
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="trainyard-webhook-") as scratch:
            files = bundle.write(Path(scratch))
            context.load_cert_chain(files.cert, files.key)
        cache = ObjectCache()
        self._api_client = await load_api_client(self.kubeconfig)
        self._group = InformerGroup(
            KubeClient(self._api_client), [*CACHED_KINDS, "Namespace"], cache, settings=self.informer_settings
        )
        self._task = asyncio.create_task(self._group.run(), name="sandbox-webhook-informers")
        async with asyncio.timeout(timeout):
            await self._group.synced.wait()
        self._server = WebhookServer(cache, context, host="127.0.0.1", port=0, shutdown_timeout=1.0)
        self.port = await self._server.start()

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()
            self._server = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._api_client is not None:
            await self._api_client.close()
            self._api_client = None
