"""Fixtures shared by the controller tests: the fake API server and a second, independent reader."""

from collections.abc import Iterator

import pytest
from fakeapi.fixtures import FakeApi, fake_api, kube_client
from queue_support import Reader

__all__ = ["fake_api", "kube_client", "reader"]


@pytest.fixture
def reader(fake_api: FakeApi) -> Iterator[Reader]:
    """The official synchronous client on the same server, for reading back what was written."""
    r = Reader(fake_api)
    yield r
    r.close()
