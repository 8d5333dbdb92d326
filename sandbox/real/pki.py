"""The real cluster's credentials: its CAs, the API server's serving certificate, tokens and kubeconfigs.

Made fresh for every cluster, as kubeadm and kwokctl make them: a cluster CA that signs the API
server's serving certificate (for 127.0.0.1, localhost and the in-cluster names), a front-proxy
CA and client certificate for the aggregation layer, an EC key that signs service-account tokens,
and a static token per identity (``--token-auth-file``): an admin in ``system:masters``, and
kube-controller-manager and kube-scheduler as the users their bootstrap RBAC roles are bound to.
Tokens are random per cluster; every private file is written owner-only.
"""

from __future__ import annotations

import base64
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from runtimes.k8s.certificates import Certificate, generate_ca, issue_client_certificate, issue_serving_certificate

API_SERVER_HOSTS = [
    "127.0.0.1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
]
FRONT_PROXY_CLIENT = "front-proxy-client"


@dataclass(frozen=True)
class Identity:
    """A static token user: kubeconfig name, Kubernetes user name and groups."""

    name: str
    user: str
    groups: tuple[str, ...]
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))


def write_private(path: Path, data: bytes) -> Path:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    return path


@dataclass
class ClusterCredentials:
    """Every file the components read, under ``directory``."""

    directory: Path
    identities: dict[str, Identity]

    @classmethod
    def create(cls, directory: Path) -> ClusterCredentials:
        directory.mkdir(parents=True, exist_ok=True)
        ca, ca_key = generate_ca("trainyard-real-cluster-ca")
        (directory / "ca.crt").write_bytes(ca.cert_pem)
        write_private(directory / "ca.key", ca.key_pem)
        serving = issue_serving_certificate(ca, ca_key, API_SERVER_HOSTS)
        (directory / "apiserver.crt").write_bytes(serving.cert_pem)
        write_private(directory / "apiserver.key", serving.key_pem)
        proxy_ca, proxy_ca_key = generate_ca("trainyard-real-front-proxy-ca")
        (directory / "front-proxy-ca.crt").write_bytes(proxy_ca.cert_pem)
        proxy_client = issue_client_certificate(proxy_ca, proxy_ca_key, FRONT_PROXY_CLIENT)
        (directory / "front-proxy-client.crt").write_bytes(proxy_client.cert_pem)
        write_private(directory / "front-proxy-client.key", proxy_client.key_pem)
        signing_key = ec.generate_private_key(ec.SECP256R1())
        write_private(directory / "sa.key", _key_bytes(signing_key))
        (directory / "sa.pub").write_bytes(
            signing_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        identities = {
            identity.name: identity
            for identity in (
                Identity("admin", "kubernetes-admin", ("system:masters",)),
                Identity("kube-controller-manager", "system:kube-controller-manager", ()),
                Identity("kube-scheduler", "system:kube-scheduler", ()),
                # KWOK and JobSet run with an admin's rights here, as kwokctl runs them.
                Identity("kwok", "kwok-controller", ("system:masters",)),
                Identity("jobset", "jobset-controller", ("system:masters",)),
                Identity("kueue", "kueue-controller", ("system:masters",)),
            )
        }
        rows = [f'{i.token},{i.user},{i.user},"{",".join(i.groups)}"' for i in identities.values()]
        write_private(directory / "tokens.csv", ("\n".join(rows) + "\n").encode())
        return cls(directory, identities)

    @property
    def ca_pem(self) -> bytes:
        return (self.directory / "ca.crt").read_bytes()

    def path(self, name: str) -> str:
        return str(self.directory / name)

    def loopback_certificate(self, directory: Path) -> Path:
        """``tls.crt``, ``tls.key`` and ``ca.crt`` for a server on 127.0.0.1, signed by the cluster CA."""
        directory.mkdir(parents=True, exist_ok=True)
        ca_key = serialization.load_pem_private_key((self.directory / "ca.key").read_bytes(), password=None)
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
            raise TypeError(f"{self.directory / 'ca.key'} is not the EC key this module writes")
        serving = issue_serving_certificate(Certificate(self.ca_pem, b""), ca_key, ["127.0.0.1", "localhost"])
        (directory / "tls.crt").write_bytes(serving.cert_pem)
        write_private(directory / "tls.key", serving.key_pem)
        (directory / "ca.crt").write_bytes(self.ca_pem)
        return directory

    def kubeconfig(self, identity: str, server: str) -> Path:
        """The kubeconfig file of one identity (written once, reused)."""
        path = self.directory / f"{identity}.kubeconfig"
        if not path.exists():
            write_kubeconfig(path, server, self.ca_pem, self.identities[identity].token, name=identity)
        return path


def write_kubeconfig(
    path: Path, server: str, ca_pem: bytes | None, token: str, *, name: str, namespace: str = "default"
) -> Path:
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode("ascii")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
    }
    return write_private(path, yaml.safe_dump(config).encode())


def _key_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
