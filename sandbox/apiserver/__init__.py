"""A fake Kubernetes API server: real HTTP on loopback, faithful enough for kubernetes-asyncio.

Use it from tests through the ``fake_api`` fixture (``from fakeapi.fixtures import fake_api``), or
start ``FakeApiServer`` (or ``start_fake_api``) directly: the benchmarks and the sandbox do.
"""

from .errors import ApiError
from .faults import Faults
from .kinds import RESOURCE_TYPES, Registry, ResourceType
from .server import NEW_TOKEN, FakeApiServer, NewToken, RecordedRequest, start_fake_api
from .store import Store

__all__ = [
    "NEW_TOKEN",
    "RESOURCE_TYPES",
    "ApiError",
    "FakeApiServer",
    "Faults",
    "NewToken",
    "RecordedRequest",
    "Registry",
    "ResourceType",
    "Store",
    "start_fake_api",
]
