"""What the installed service exposes, and to whom: the webhook's port to the API server only, the
visibility API verified by the API server, and reviews answered inside the API server's timeout."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest
import yaml
from kustomize_support import build

from webhooks.review_runner import DEFAULT_REVIEW_DEADLINE

ROOT = Path(__file__).resolve().parents[2]
VISIBILITY = ROOT / "manifests" / "visibility"


@pytest.fixture(scope="module")
def installed() -> list[dict[str, Any]]:
    return build(ROOT / "manifests" / "install")


def _one(documents: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    return found


def _visibility() -> list[dict[str, Any]]:
    return [d for path in sorted(VISIBILITY.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]


def test_only_the_webhook_port_is_open_and_not_to_pods(installed: list[dict[str, Any]]) -> None:
    policy = _one(installed, "NetworkPolicy")
    deployment = _one(installed, "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # everything not admitted below is refused
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    serving_port = int(container["args"][container["args"].index("--port") + 1])
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": serving_port}]
    (source,) = rule["from"]
    block = source["ipBlock"]
    assert ipaddress.ip_network(block["cidr"]) == ipaddress.ip_network("0.0.0.0/0")
    assert block["except"], "the pod network is excepted: no Pod may connect"
    assert all(ipaddress.ip_network(cidr).is_private for cidr in block["except"])


def test_the_api_server_verifies_the_visibility_api(installed: list[dict[str, Any]]) -> None:
    documents = _visibility()
    (api_service,) = [d for d in documents if d["kind"] == "APIService"]
    assert "insecureSkipTLSVerify" not in api_service["spec"]
    assert "caBundle" in api_service["spec"]
    certificate = _one(installed, "Certificate")
    injected = api_service["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert injected == f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
    backing = api_service["spec"]["service"]
    (service,) = [d for d in documents if d["kind"] == "Service" and d["metadata"]["name"] == backing["name"]]
    # the API server checks the certificate against the name of the Service it calls
    assert f"{backing['name']}.{backing['namespace']}.svc" in certificate["spec"]["dnsNames"]
    labels = _one(installed, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()


def test_every_review_is_answered_inside_the_api_servers_timeout(installed: list[dict[str, Any]]) -> None:
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in _one(installed, kind)["webhooks"]:
            # the deadline leaves the API server's round trip and the TLS handshake a second or more
            assert hook["timeoutSeconds"] >= DEFAULT_REVIEW_DEADLINE + 1, hook["name"]
