"""What a job's page asks the API server for directly, beyond the cache: its Events and pod logs.

Both go through the kubeconfig's (or the service account's) credentials with the
kubernetes-asyncio client, as `trainyard run --kubeconfig` reads them. A cluster that does not
serve a pod's log (the embedded sandbox runs no containers) answers with an error the page shows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s_client

from scheduler.kube import KubeApiError, KubeClient

EVENT_LIMIT = 100


class ClusterAccess:
    def __init__(self, api_client: k8s_client.ApiClient, request_timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.client = KubeClient(api_client, request_timeout=request_timeout)
        self.request_timeout = request_timeout

    async def events(self, namespace: str, names: set[str]) -> list[dict[str, Any]]:
        """The namespace's Events about objects named in ``names``, newest last."""
        listed = await self.client.list("Event", namespace)
        found = [e for e in listed.items if (e.get("involvedObject") or {}).get("name") in names]
        found.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        return found[-EVENT_LIMIT:]

    async def pod_log(self, namespace: str, pod: str, container: str, *, follow: bool) -> AsyncIterator[str]:
        """The container's log lines, and with ``follow`` the new ones as they come, until cancelled."""
        query = [("container", container)] + ([("follow", "true")] if follow else [])
        response = await self.api_client.call_api(
            f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
            "GET",
            query_params=query,
            header_params={"Accept": "text/plain"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout),
        )
        try:
            if response.status != 200:
                raise KubeApiError.from_body(response.status, await response.read())
            while line := await response.content.readline():
                yield line.decode("utf-8", "replace").rstrip("\n")
        finally:
            response.release()
