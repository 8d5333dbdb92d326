"""Fixtures of the webhook tests: a session CA, the fixture objects, a running server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from webhook_support import OBJECTS, Webhook, start_webhook, stop_webhook

from webhooks.objects import ObjectCache, load_directory
from webhooks.tls import CertificateFiles, SelfSignedBundle, self_signed


@pytest.fixture(scope="session")
def tls_bundle() -> SelfSignedBundle:
    return self_signed(["localhost", "127.0.0.1"])


@pytest.fixture
def tls_files(tls_bundle: SelfSignedBundle, tmp_path: Path) -> CertificateFiles:
    return tls_bundle.write(tmp_path / "tls")


@pytest.fixture
def cache() -> ObjectCache:
    objects = ObjectCache()
    load_directory(OBJECTS, objects)
    return objects


@pytest.fixture
async def webhook(
    cache: ObjectCache, tls_files: CertificateFiles, tls_bundle: SelfSignedBundle
) -> AsyncIterator[Webhook]:
    running = await start_webhook(cache, tls_files, tls_bundle.ca.cert_pem)
    yield running
    await stop_webhook(running)
