"""pytest fixtures: a running fake API server, its kubeconfig, and a kubernetes-asyncio client for it.

Import them where they are used (``from fakeapi.fixtures import fake_api, kube_client``); pytest
finds fixtures imported into a test module or a conftest.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from sandbox.apiserver import FakeApiServer, Faults, Store


@dataclass
class FakeApi:
    """What the ``fake_api`` fixture yields."""

    server: FakeApiServer
    kubeconfig: Path

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def faults(self) -> Faults:
        return self.server.faults

    @property
    def store(self) -> Store:
        return self.server.store

    async def api_client(self) -> client.ApiClient:
        """A new ApiClient configured from the kubeconfig; the caller closes it."""
        configuration = client.Configuration()
        await config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=configuration)
        return client.ApiClient(configuration)


@pytest.fixture
async def fake_api(tmp_path: Path) -> AsyncIterator[FakeApi]:
    server = FakeApiServer()
    await server.start()
    try:
        yield FakeApi(server, server.write_kubeconfig(tmp_path / "kubeconfig"))
    finally:
        await server.stop()


@pytest.fixture
async def kube_client(fake_api: FakeApi) -> AsyncIterator[client.ApiClient]:
    api = await fake_api.api_client()
    try:
        yield api
    finally:
        await api.close()
