"""The one certificate builder every TLS server shares (runtimes.k8s.certificates)."""

from __future__ import annotations

import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from runtimes.k8s.certificates import CertificateError, generate_ca, issue_client_certificate, issue_serving_certificate


def _verify_signed_by(cert: x509.Certificate, ca: x509.Certificate) -> None:
    public_key = ca.public_key()
    assert isinstance(public_key, ec.EllipticCurvePublicKey)
    assert cert.signature_hash_algorithm is not None
    public_key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))


def test_a_serving_certificate_names_its_hosts_and_is_signed_by_the_ca() -> None:
    ca, ca_key = generate_ca("test-ca")
    serving = issue_serving_certificate(ca, ca_key, ["webhook.ns.svc", "127.0.0.1", "::1"])
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    cert = x509.load_pem_x509_certificate(serving.cert_pem)
    assert ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.issuer == ca_cert.subject
    _verify_signed_by(cert, ca_cert)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["webhook.ns.svc"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert b"PRIVATE KEY" in serving.key_pem


def test_a_client_certificate_is_for_client_auth_and_has_no_hosts() -> None:
    ca, ca_key = generate_ca("proxy-ca")
    client = x509.load_pem_x509_certificate(issue_client_certificate(ca, ca_key, "front-proxy").cert_pem)
    _verify_signed_by(client, x509.load_pem_x509_certificate(ca.cert_pem))
    assert list(client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    with pytest.raises(x509.ExtensionNotFound):
        client.extensions.get_extension_for_class(x509.SubjectAlternativeName)


def test_a_serving_certificate_needs_a_host() -> None:
    ca, ca_key = generate_ca("test-ca")
    with pytest.raises(CertificateError, match="at least one host"):
        issue_serving_certificate(ca, ca_key, [])
