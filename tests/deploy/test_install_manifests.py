"""manifests/install: the whole service as one kustomization, and its least-privilege RBAC."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from kustomize_support import build, build_with_kubectl, build_without_kubectl, identity, kubectl_available

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "manifests" / "install"
WEBHOOK = ROOT / "manifests" / "webhook"
COMPONENTS = ("webhook", "queue controller", "queue-status controller", "launcher", "ungater", "leader election")
RBAC_FILES = [INSTALL / "controller-rbac.yaml", INSTALL / "leader-election-rbac.yaml", WEBHOOK / "rbac.yaml"]


@pytest.fixture(scope="module")
def installed() -> list[dict[str, Any]]:
    return build(INSTALL)


def one(documents: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in documents if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


@pytest.mark.skipif(not kubectl_available(), reason="kubectl is not installed")
@pytest.mark.parametrize("directory", [INSTALL, WEBHOOK], ids=["install", "webhook"])
def test_the_tests_builder_agrees_with_kubectl_kustomize(directory: Path) -> None:
    by_kubectl = {identity(d): d for d in build_with_kubectl(directory)}
    by_subset = {identity(d): d for d in build_without_kubectl(directory)}
    assert by_kubectl == by_subset


def test_install_holds_the_whole_service(installed: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in installed)
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",  # webhook (read-only)
            "ClusterRole",
            "ClusterRoleBinding",  # controllers
            "Role",
            "RoleBinding",  # leader election
            "Issuer",
            "Certificate",
            "Service",
            "Deployment",
            "NetworkPolicy",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "PodDisruptionBudget",
        ]
    )
    assert len({identity(d) for d in installed}) == len(installed)


def test_deployment_runs_every_service_hardened(installed: list[dict[str, Any]]) -> None:
    deployment = one(installed, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][:3] == ["serve", "--launcher", "jobset"]
    assert container["image"] == "ghcr.io/trainyard/trainyard:0.1.0"
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["runAsUser"] == 10001, "the Dockerfile's USER"
    assert container["resources"]["requests"]["cpu"]
    assert container["resources"]["limits"]["memory"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    tls_dir = container["args"][container["args"].index("--tls-cert-dir") + 1]
    assert volumes[mounts[tls_dir]]["secret"]["secretName"] == "trainyard-webhook-tls"
    assert "emptyDir" in volumes[mounts["/tmp"]], "/tmp is the only writable place"
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}
    assert pod["serviceAccountName"] == one(installed, "ServiceAccount")["metadata"]["name"]


def test_deployment_args_are_what_trainyard_serve_accepts(installed: list[dict[str, Any]]) -> None:
    from trainyard.cli import serve

    parser = argparse.ArgumentParser(exit_on_error=False)
    serve.configure(parser)
    container = one(installed, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    args = parser.parse_args(container["args"][1:])
    assert args.launcher == "jobset"
    assert args.tls_cert_dir == Path("/tls")


def test_service_certificate_and_webhooks_meet(installed: list[dict[str, Any]]) -> None:
    service = one(installed, "Service")
    deployment = one(installed, "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    budget = one(installed, "PodDisruptionBudget")
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    port = container["args"][container["args"].index("--port") + 1]
    assert str(service["spec"]["ports"][0]["targetPort"]) == port
    host = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert host in one(installed, "Certificate")["spec"]["dnsNames"]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in one(installed, kind)["webhooks"]:
            target = hook["clientConfig"]["service"]
            assert (target["name"], target["namespace"], target["port"]) == (
                service["metadata"]["name"],
                service["metadata"]["namespace"],
                service["spec"]["ports"][0]["port"],
            )


def test_every_binding_names_the_deployments_service_account(installed: list[dict[str, Any]]) -> None:
    account = one(installed, "ServiceAccount")["metadata"]
    roles = {(d["kind"], d["metadata"]["name"]) for d in installed if d["kind"] in {"Role", "ClusterRole"}}
    for binding in (d for d in installed if d["kind"] in {"RoleBinding", "ClusterRoleBinding"}):
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in roles
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
        ]
    lease_role = one(installed, "Role")
    assert lease_role["metadata"]["namespace"] == account["namespace"]


def _rules_with_comments(path: Path) -> list[tuple[dict[str, Any], str]]:
    """Each rule of the file's (Cluster)Roles with the comment lines right above it."""
    pairs: list[tuple[dict[str, Any], str]] = []
    for chunk in path.read_text().split("\n---"):
        document = yaml.safe_load(chunk)
        if not document or document["kind"] not in {"Role", "ClusterRole"}:
            continue
        rules_text = chunk.split("\nrules:\n", 1)[1]
        blocks = re.split(r"\n(?=  - apiGroups:)", "\n" + rules_text)
        comment = ""
        parsed_rules = iter(document["rules"])
        for block in blocks:
            lines = block.splitlines()
            head = [ln for ln in lines if ln.startswith("  - apiGroups:")]
            if head:
                pairs.append((next(parsed_rules), comment))
            comment = " ".join(ln.strip().lstrip("#").strip() for ln in lines if ln.strip().startswith("#"))
        assert next(parsed_rules, None) is None, f"{path}: a rule was not matched to its text"
    return pairs


@pytest.mark.parametrize("path", RBAC_FILES, ids=lambda p: p.name)
def test_every_verb_is_justified_by_a_controller(path: Path) -> None:
    name = path.name
    pairs = _rules_with_comments(path)
    assert pairs
    for rule, comment in pairs:
        where = f"{name}: rule {rule['resources']}"
        assert any(component in comment for component in COMPONENTS), f"{where} names no controller"
        assert "*" not in rule["verbs"], f"{where} grants every verb"
        assert "*" not in rule["resources"], f"{where} grants every resource"
        for verb in rule["verbs"]:
            assert re.search(rf"\b{verb}\b", comment), f"{where}: verb {verb!r} has no reason in its comment"


def test_controller_rbac_is_exactly_the_controllers_needs(installed: list[dict[str, Any]]) -> None:
    role = one(installed, "ClusterRole", "trainyard-controller")
    granted = {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    watch = {"list", "watch"}  # informers: they never get a single object
    assert granted[("trainer.kubeflow.org", "trainjobs")] == watch | {"update", "patch"}
    assert granted[("trainer.kubeflow.org", "trainjobs/status")] == {"patch"}
    assert granted[("kueue.x-k8s.io", "workloads")] == watch | {"create", "get"}
    assert granted[("kueue.x-k8s.io", "workloads/status")] == {"patch"}
    assert granted[("jobset.x-k8s.io", "jobsets")] == watch | {"create", "delete"}
    assert granted[("scheduling.x-k8s.io", "podgroups")] == {"create"}
    assert granted[("", "pods")] == {"list", "watch", "update"}
    assert granted[("", "events")] == {"create"}
    assert granted[("trainer.kubeflow.org", "trainjobs/finalizers")] == {"update"}
    for secret_like in ("secrets", "configmaps"):
        assert granted[("", secret_like)] == {"create"}, "no Secret is read, listed or watched"
    assert not any("delete" in verbs for key, verbs in granted.items() if key[1] in {"pods", "secrets", "nodes"})
    lease = one(installed, "Role", "trainyard-leader-election")
    by_verbs = {tuple(sorted(rule["verbs"])): rule for rule in lease["rules"]}
    assert by_verbs[("get", "update")]["resourceNames"] == ["trainyard-controller"]
    assert "resourceNames" not in by_verbs[("create",)], "RBAC cannot restrict create by name"


def test_lease_name_is_the_controllers() -> None:
    from scheduler.controllers.constants import LEADER_LEASE_NAME

    lease_rules = yaml.safe_load((INSTALL / "leader-election-rbac.yaml").read_text().split("\n---")[0])["rules"]
    assert [LEADER_LEASE_NAME] in [rule.get("resourceNames") for rule in lease_rules]
