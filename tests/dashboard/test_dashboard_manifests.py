"""manifests/dashboard: the service with its dashboard, reachable only through the cluster's authentication."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "deploy"))  # the kustomize builder the deploy tests use

from kustomize_support import build, identity  # noqa: E402

DASHBOARD = ROOT / "manifests" / "dashboard"


def _one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind]
    return found


def test_the_dashboard_is_the_install_plus_a_service_behind_a_network_policy() -> None:
    installed = {identity(d) for d in build(ROOT / "manifests" / "install")}
    documents = build(DASHBOARD)
    assert {identity(d) for d in documents} - installed == {
        ("v1", "Service", "trainyard-system", "trainyard-dashboard"),
        ("networking.k8s.io/v1", "NetworkPolicy", "trainyard-system", "trainyard-dashboard"),
    }
    deployment = _one(documents, "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    from trainyard.cli import serve

    parser = argparse.ArgumentParser(exit_on_error=False)
    serve.configure(parser)
    args = parser.parse_args(container["args"][1:])
    assert (args.dashboard_port, args.dashboard_host, args.dashboard_allow_set_quota) == (8765, "0.0.0.0", False)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["dashboard"] == 8765

    services = [d for d in documents if d["kind"] == "Service" and d["metadata"]["name"] == "trainyard-dashboard"]
    (service,) = services
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"][0]["targetPort"] == "dashboard"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items())


def test_only_the_authenticating_proxy_reaches_the_dashboard_port() -> None:
    documents = build(DASHBOARD)
    policies = {d["metadata"]["name"]: d for d in documents if d["kind"] == "NetworkPolicy"}
    (rule,) = policies["trainyard-dashboard"]["spec"]["ingress"]
    assert [p["port"] for p in rule["ports"]] == [8765]
    assert rule["from"] == [
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"trainyard.io/dashboard-proxy": "true"}}}
    ]
    opened = {p["port"] for policy in policies.values() for r in policy["spec"]["ingress"] for p in r["ports"]}
    assert opened == {8765, 9443}, "policies add up: the dashboard's opens its own port and no other"
