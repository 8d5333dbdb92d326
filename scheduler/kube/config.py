"""A kubernetes-asyncio ApiClient from a kubeconfig file or the Pod's in-cluster service account."""

from __future__ import annotations

import asyncio
import os
import urllib.request
from pathlib import Path

from kubernetes_asyncio import client, config
from kubernetes_asyncio.config.config_exception import ConfigException

from scheduler.kube.errors import KubeConfigError


def running_in_cluster() -> bool:
    """True inside a Pod: the service environment variables Kubernetes sets are present."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT"))


async def load_api_client(kubeconfig: Path | None = None, *, context: str | None = None) -> client.ApiClient:
    """An ApiClient for ``kubeconfig`` or, without one, the in-cluster config. The caller closes it.

    A missing or unusable kubeconfig raises ``KubeConfigError`` naming the file and what to fix.
    """
    configuration = client.Configuration()
    if kubeconfig is not None:
        if not kubeconfig.is_file():
            raise KubeConfigError(
                f"kubeconfig {kubeconfig} does not exist; pass --kubeconfig PATH to a kubeconfig file"
            )
        try:
            await config.load_kube_config(
                config_file=str(kubeconfig), context=context, client_configuration=configuration
            )
        except (ConfigException, ValueError, KeyError, TypeError) as error:
            raise KubeConfigError(f"kubeconfig {kubeconfig} cannot be used: {error}") from None
    else:
        if not running_in_cluster():
            raise KubeConfigError(
                "no --kubeconfig given and not running in a Pod (KUBERNETES_SERVICE_HOST is unset); "
                "pass --kubeconfig PATH"
            )
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as error:
            raise KubeConfigError(f"in-cluster configuration cannot be used: {error}") from None
    api_client = client.ApiClient(configuration)
    _skip_environment_lookups(api_client)
    return api_client


async def close_api_client(api_client: client.ApiClient) -> None:
    """Close ``api_client`` and give its TLS connections the loop turns they need to finish closing.

    aiohttp waits for the connections it pools, but a connection a cancelled request was still
    opening (a watch reconnecting at shutdown) closes a few callbacks later; an ``asyncio.run``
    that ends first leaves its socket to the garbage collector (a ResourceWarning). Callers that
    own their loop close with this before they return.
    """
    await api_client.close()
    await asyncio.sleep(0.25)


def _skip_environment_lookups(api_client: client.ApiClient) -> None:
    """No proxy in the environment: stop aiohttp looking one up (and a .netrc entry) per request.

    kubernetes-asyncio opens its session with ``trust_env=True``, so every request makes two
    trips to a worker thread (netrc, then proxy environment variables): a few milliseconds of
    latency each on a busy host, for an answer fixed when the process started. With a proxy set
    (HTTPS_PROXY and friends) the session is left as it is, so the proxy is honoured.
    """
    if urllib.request.getproxies():
        return
    session = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    if session is not None and hasattr(session, "_trust_env"):
        session._trust_env = False
