"""X.509 certificates as Kubernetes components use them: a CA, serving certificates, client certificates.

One copy of the certificate-building rules for every trainyard server that speaks TLS (the
webhook, the visibility API, the sandbox API server): EC P-256 keys, SHA-256 signatures, a
five-minute backdating against clock skew, subject alternative names that hold IP addresses as
addresses and everything else as DNS names. Generation only: loading and serving is the caller's.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CLOCK_SKEW = datetime.timedelta(minutes=5)


class CertificateError(ValueError):
    """A certificate that cannot be made as asked; the message says what is missing."""


@dataclass(frozen=True)
class Certificate:
    cert_pem: bytes
    key_pem: bytes


def subject_name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def subject_alternative_names(hosts: Sequence[str]) -> x509.SubjectAlternativeName:
    """IP addresses as addresses, everything else as DNS names (clients match them apart)."""
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, days: int
) -> x509.CertificateBuilder:
    """A certificate of ``key`` for ``subject``, valid from a little before now for ``days``."""
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=days))
    )


def generate_ca(common_name: str, days: int = 3650) -> tuple[Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA that may sign leaf certificates (path length 0), and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = subject_name(common_name)
    cert = (
        _builder(name, name, key, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Certificate(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)), key


def _issue(
    ca: Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    usage: x509.ObjectIdentifier,
    days: int,
    hosts: Sequence[str] = (),
) -> Certificate:
    """A leaf certificate for ``common_name`` with one extended key usage, signed by ``ca``."""
    issuer = x509.load_pem_x509_certificate(ca.cert_pem).subject
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(subject_name(common_name), issuer, key, days)
    if hosts:
        builder = builder.add_extension(subject_alternative_names(hosts), critical=False)
    cert = (
        builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Certificate(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_serving_certificate(
    ca: Certificate, ca_key: ec.EllipticCurvePrivateKey, hosts: Sequence[str], days: int = 365
) -> Certificate:
    """A serving certificate for ``hosts`` (DNS names and IP addresses; the first is its subject) signed by ``ca``."""
    if not hosts:
        raise CertificateError("a serving certificate needs at least one host name or address")
    return _issue(ca, ca_key, hosts[0], ExtendedKeyUsageOID.SERVER_AUTH, days, hosts)


def issue_client_certificate(
    ca: Certificate, ca_key: ec.EllipticCurvePrivateKey, common_name: str, days: int = 365
) -> Certificate:
    """A client certificate for ``common_name`` signed by ``ca`` (a front proxy's, a test caller's)."""
    return _issue(ca, ca_key, common_name, ExtendedKeyUsageOID.CLIENT_AUTH, days)
