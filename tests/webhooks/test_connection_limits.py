"""No caller can hold a connection to the webhook open: every step of one is bounded in time.

Raw sockets on loopback against the real HTTPS server, with the limits shortened so each case
takes seconds; the defaults the server ships with are checked against the issue's bounds.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import AsyncIterator

import pytest
from webhook_support import Webhook, start_webhook, stop_webhook

from webhooks.connections import BODY_READ_TIMEOUT, KEEPALIVE_TIMEOUT, LINGER_TIME, TLS_HANDSHAKE_TIMEOUT
from webhooks.objects import ObjectCache
from webhooks.server import ConnectionLimits
from webhooks.tls import CertificateFiles, SelfSignedBundle, client_context

LIMITS = ConnectionLimits(tls_handshake=1.0, keepalive=1.5, body_read=1.0, linger=0.5)
SLACK = 3.0  # seconds past a limit within which the server must have closed (a busy machine)


@pytest.fixture
async def bounded(
    cache: ObjectCache, tls_files: CertificateFiles, tls_bundle: SelfSignedBundle
) -> AsyncIterator[Webhook]:
    webhook = await start_webhook(cache, tls_files, tls_bundle.ca.cert_pem, limits=LIMITS)
    yield webhook
    await stop_webhook(webhook)


def test_the_shipped_limits_close_a_stalled_connection_within_a_minute() -> None:
    assert ConnectionLimits() == ConnectionLimits(
        TLS_HANDSHAKE_TIMEOUT, KEEPALIVE_TIMEOUT, BODY_READ_TIMEOUT, LINGER_TIME
    )
    assert TLS_HANDSHAKE_TIMEOUT <= 10
    assert KEEPALIVE_TIMEOUT <= 30  # also the bound on a request's headers
    assert BODY_READ_TIMEOUT + LINGER_TIME <= 15


async def _tls(webhook: Webhook, ca_pem: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(
        "127.0.0.1", webhook.server.port, ssl=client_context(ca_pem), server_hostname="localhost"
    )


async def _closed_after(reader: asyncio.StreamReader, within: float) -> float:
    """Seconds until the server closes the connection (EOF or reset); fails after ``within``."""
    started = time.monotonic()
    try:
        while await asyncio.wait_for(reader.read(4096), timeout=within):
            pass  # a response (408) may come first; the close follows it
    except (ConnectionResetError, ssl.SSLError):
        pass
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open for more than {within:g}s") from None
    return time.monotonic() - started


async def test_a_connection_that_never_finishes_its_headers_is_closed(
    bounded: Webhook, tls_bundle: SelfSignedBundle
) -> None:
    reader, writer = await _tls(bounded, tls_bundle.ca.cert_pem)
    writer.write(b"POST /validate/trainjobs HTTP/1.1\r\nHost: localhost\r\n")

    async def trickle() -> None:
        for index in range(100):  # a header line a little at a time, never the blank line
            writer.write(f"X-Slow-{index}: a\r\n".encode())
            await asyncio.sleep(0.2)

    dripping = asyncio.create_task(trickle())
    try:
        waited = await _closed_after(reader, LIMITS.keepalive + SLACK)
    finally:
        dripping.cancel()
        writer.close()
    assert waited >= LIMITS.keepalive - 0.5


async def test_a_body_that_stops_arriving_gets_408_and_a_close(bounded: Webhook, tls_bundle: SelfSignedBundle) -> None:
    reader, writer = await _tls(bounded, tls_bundle.ca.cert_pem)
    writer.write(
        b"POST /validate/trainjobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b'Content-Length: 1000\r\n\r\n{"apiVersion":'
    )
    status = await asyncio.wait_for(reader.readline(), timeout=LIMITS.body_read + SLACK)
    assert status.startswith(b"HTTP/1.1 408"), status
    await _closed_after(reader, LIMITS.linger + SLACK)
    writer.close()


async def test_an_idle_connection_is_closed_after_the_keepalive(bounded: Webhook, tls_bundle: SelfSignedBundle) -> None:
    reader, writer = await _tls(bounded, tls_bundle.ca.cert_pem)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert (await reader.readline()).startswith(b"HTTP/1.1 200")
    waited = await _closed_after(reader, LIMITS.keepalive + SLACK)
    assert waited >= LIMITS.keepalive - 0.5
    writer.close()


async def test_a_connection_that_never_starts_tls_is_closed(bounded: Webhook) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", bounded.server.port)  # plain TCP, silent
    await _closed_after(reader, LIMITS.tls_handshake + SLACK)
    writer.close()


def _handshake(port: int, ca_pem: bytes, ciphers: str) -> str:
    context = client_context(ca_pem)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(ciphers)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        cipher = tls.cipher()
        assert cipher is not None
        return cipher[0]


@pytest.mark.parametrize("cbc", ["ECDHE-ECDSA-AES128-SHA256", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-AES128-SHA"])
async def test_tls12_offers_aead_suites_only(bounded: Webhook, tls_bundle: SelfSignedBundle, cbc: str) -> None:
    port, ca_pem = bounded.server.port, tls_bundle.ca.cert_pem
    with pytest.raises(ssl.SSLError):
        await asyncio.to_thread(_handshake, port, ca_pem, cbc)
    chosen = await asyncio.to_thread(_handshake, port, ca_pem, f"{cbc}:ECDHE-ECDSA-AES128-GCM-SHA256")
    assert chosen == "ECDHE-ECDSA-AES128-GCM-SHA256"
    assert all(suite["aead"] for suite in bounded.server.ssl_context.get_ciphers())
