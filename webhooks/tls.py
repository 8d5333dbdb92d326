"""Serving certificates: from files (a mounted Secret, reloaded on change) or self-signed at start.

A Secret written by cert-manager is mounted as a directory holding ``tls.crt``, ``tls.key`` and
``ca.crt``. Kubernetes updates such mounts by swapping a symlink, and gives no inotify, so the
``CertificateReloader`` polls the files' stat and calls ``load_cert_chain`` on the *live*
``SSLContext``: new handshakes use the new chain, open connections keep theirs, nothing restarts.
A half-written pair (new cert, old key) fails to load and is simply retried on the next poll.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

# Certificates are made by the one builder every TLS server shares; re-exported for callers here.
from runtimes.k8s.certificates import Certificate as Certificate
from runtimes.k8s.certificates import CertificateError
from runtimes.k8s.certificates import generate_ca as generate_ca
from runtimes.k8s.certificates import issue_client_certificate as issue_client_certificate
from runtimes.k8s.certificates import issue_serving_certificate as issue_serving_certificate

log = logging.getLogger(__name__)

CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
CA_FILE = "ca.crt"
WEBHOOK_CA_NAME = "trainyard-webhook-ca"


class TLSError(ValueError):
    """Certificates that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class CertificateFiles:
    directory: Path

    @property
    def cert(self) -> Path:
        return self.directory / CERT_FILE

    @property
    def key(self) -> Path:
        return self.directory / KEY_FILE

    @property
    def ca(self) -> Path:
        return self.directory / CA_FILE


@dataclass(frozen=True)
class SelfSignedBundle:
    """A CA and a serving certificate it signed, all PEM."""

    ca: Certificate
    serving: Certificate

    @property
    def ca_bundle(self) -> str:
        """The base64 caBundle for a webhook configuration's clientConfig."""
        return base64.b64encode(self.ca.cert_pem).decode("ascii")

    def write(self, directory: Path) -> CertificateFiles:
        """Write the Secret layout (tls.crt, tls.key, ca.crt); the key file is private to the user."""
        directory.mkdir(parents=True, exist_ok=True)
        files = CertificateFiles(directory)
        files.cert.write_bytes(self.serving.cert_pem)
        files.ca.write_bytes(self.ca.cert_pem)
        descriptor = os.open(files.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(self.serving.key_pem)
        return files


def service_hosts(service: str, namespace: str) -> list[str]:
    """The names the API server uses to reach a webhook Service, plus loopback for local use."""
    return [
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
        f"{service}.{namespace}",
        service,
        "localhost",
        "127.0.0.1",
        "::1",
    ]


def self_signed(hosts: list[str]) -> SelfSignedBundle:
    ca, ca_key = generate_ca(WEBHOOK_CA_NAME)
    try:
        return SelfSignedBundle(ca, issue_serving_certificate(ca, ca_key, hosts))
    except CertificateError as error:
        raise TLSError(str(error)) from None


# TLS 1.2 suites: forward-secret key exchange and AEAD ciphers only (no CBC, whose MAC-then-encrypt
# construction has a history of padding-oracle attacks). TLS 1.3's suites are all AEAD already.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


def server_context(files: CertificateFiles) -> ssl.SSLContext:
    """A TLS server context (TLS 1.2+, AEAD suites only) serving the chain in ``files``."""
    for path in (files.cert, files.key):
        if not path.is_file():
            raise TLSError(f"{path} does not exist; --tls-cert-dir must hold {CERT_FILE} and {KEY_FILE}")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    try:
        context.load_cert_chain(files.cert, files.key)
    except (ssl.SSLError, OSError) as error:
        raise TLSError(f"cannot load {files.cert} with {files.key}: {error}") from None
    return context


def require_client_ca(context: ssl.SSLContext, ca_file: Path | None = None, *, ca_pem: str | None = None) -> None:
    """Ask callers for a client certificate and accept only those the CA signed (optional for callers).

    The aggregator's front-proxy certificate (``--requestheader-client-ca-file``, or the
    ``extension-apiserver-authentication`` ConfigMap's PEM in ``ca_pem``) is verified this way;
    callers without a certificate still connect (webhook calls, bearer tokens). Only this CA is
    trusted for client certificates: the server context loads no system CAs. A live context
    takes it for the next handshakes.
    """
    if ca_file is not None and not ca_file.is_file():
        raise TLSError(f"{ca_file} does not exist; --requestheader-client-ca-file must be a PEM CA bundle")
    where = str(ca_file) if ca_file is not None else "the requestheader client CA"
    try:
        context.load_verify_locations(cafile=str(ca_file) if ca_file is not None else None, cadata=ca_pem)
    except (ssl.SSLError, OSError, ValueError) as error:
        raise TLSError(f"cannot load the client CA {where}: {error}") from None
    context.verify_mode = ssl.CERT_OPTIONAL


def client_context(ca_pem: bytes) -> ssl.SSLContext:
    """A client context that trusts only ``ca_pem`` (tests, the benchmark, health checks)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_pem.decode("ascii"))
    return context


class CertificateReloader:
    """Reload a live ``SSLContext`` when its certificate files change (polling their stat)."""

    def __init__(self, context: ssl.SSLContext, files: CertificateFiles, interval: float = 10.0) -> None:
        self.context = context
        self.files = files
        self.interval = interval
        self.reloads = 0
        self._seen = self._stamp()

    def _stamp(self) -> tuple[tuple[int, int, int], ...]:
        stamps = []
        for path in (self.files.cert, self.files.key):
            try:
                stat = path.stat()  # follows the Secret mount's ..data symlink
            except OSError:
                stamps.append((0, 0, 0))
                continue
            stamps.append((stat.st_mtime_ns, stat.st_ino, stat.st_size))
        return tuple(stamps)

    def check(self) -> bool:
        """Reload if the files changed since the last successful load; True when reloaded."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        try:
            self.context.load_cert_chain(self.files.cert, self.files.key)
        except (ssl.SSLError, OSError) as error:
            # Likely mid-rotation (cert written, key not yet): keep serving the old chain.
            log.warning("TLS files in %s changed but do not load yet (%s); retrying", self.files.directory, error)
            return False
        self._seen = stamp
        self.reloads += 1
        log.info("reloaded TLS certificate from %s", self.files.directory)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.check()


WEBHOOK_CONFIGURATION_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def write_ca_bundle(path: Path, ca_pem: bytes) -> int:
    """Set ``clientConfig.caBundle`` of every webhook in the configurations YAML at ``path``.

    Returns how many webhooks were updated; the file keeps its other documents and fields.
    """
    import yaml

    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except OSError as error:
        raise TLSError(f"cannot read {path}: {error.strerror}; pass the webhook configurations YAML") from None
    except yaml.YAMLError as error:
        raise TLSError(f"{path} is not valid YAML: {error}") from None
    bundle = base64.b64encode(ca_pem).decode("ascii")
    updated = 0
    for document in documents:
        if not isinstance(document, dict) or document.get("kind") not in WEBHOOK_CONFIGURATION_KINDS:
            continue
        for webhook in document.get("webhooks") or []:
            webhook.setdefault("clientConfig", {})["caBundle"] = bundle
            updated += 1
    if updated == 0:
        raise TLSError(
            f"{path} holds no MutatingWebhookConfiguration or ValidatingWebhookConfiguration webhooks; "
            "use manifests/webhook/webhook-configurations.yaml"
        )
    # Written aside and renamed over the file, so that a reader (kubectl apply, a test) never
    # sees it half written.
    staged = path.with_name(f".{path.name}.trainyard-tmp")
    staged.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    os.replace(staged, path)
    return updated
