"""TLS for the sandbox API server: a generated CA and a serving certificate for loopback.

The CA's PEM goes into the kubeconfig as ``certificate-authority-data``, so any standard client
(kubernetes-asyncio, the official ``kubernetes`` package, kubectl) verifies the server as it
would a real cluster's, with no ``insecure-skip-tls-verify``.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from runtimes.k8s.certificates import generate_ca, issue_serving_certificate

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ServingCertificates:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """A TLS 1.2+ server context serving this certificate (the key touches disk only briefly)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="sandbox-tls-") as scratch:
            cert, key = Path(scratch) / "tls.crt", Path(scratch) / "tls.key"
            cert.write_bytes(self.cert_pem)
            descriptor = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(self.key_pem)
            context.load_cert_chain(cert, key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client context trusting only this CA."""
        return ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=self.ca_pem.decode("ascii"))


def generate(hosts: tuple[str, ...] = LOOPBACK_HOSTS, *, days: int = 30) -> ServingCertificates:
    """A fresh CA and a certificate for ``hosts`` (names and addresses) that it signs."""
    ca, ca_key = generate_ca("trainyard-sandbox-ca", days=days)
    serving = issue_serving_certificate(ca, ca_key, hosts, days=days)
    return ServingCertificates(ca.cert_pem, serving.cert_pem, serving.key_pem)
