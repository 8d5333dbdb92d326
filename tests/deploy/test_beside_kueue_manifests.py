"""manifests/beside-kueue: the install as Kueue's topology admission check, built like the other overlays."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml
from kustomize_support import build, build_with_kubectl, build_without_kubectl, identity, kubectl_available
from rbac_support import RBAC_FILES, Request, allowed, granted_rules

from scheduler.api.kueue import AdmissionCheck
from scheduler.engine import TOPOLOGY_CHECK_CONTROLLER

ROOT = Path(__file__).resolve().parents[2]
BESIDE_KUEUE = ROOT / "manifests" / "beside-kueue"
CHECK_RBAC = BESIDE_KUEUE / "check-rbac.yaml"


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    return build(BESIDE_KUEUE)


def _one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind]
    return found


@pytest.mark.skipif(not kubectl_available(), reason="kubectl is not installed")
def test_the_tests_builder_agrees_with_kubectl_kustomize() -> None:
    by_kubectl = {identity(d): d for d in build_with_kubectl(BESIDE_KUEUE)}
    by_subset = {identity(d): d for d in build_without_kubectl(BESIDE_KUEUE)}
    assert by_kubectl == by_subset


def test_it_is_the_install_plus_the_check_and_its_rbac(documents: list[dict[str, Any]]) -> None:
    installed = {identity(d) for d in build(ROOT / "manifests" / "install")}
    assert {identity(d) for d in documents} - installed == {
        ("rbac.authorization.k8s.io/v1", "ClusterRole", "", "trainyard-admission-check"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "trainyard-admission-check"),
        ("kueue.x-k8s.io/v1beta2", "AdmissionCheck", "", "trainyard-topology"),
    }
    check = AdmissionCheck.model_validate(_one(documents, "AdmissionCheck"))
    assert check.spec.controller_name == TOPOLOGY_CHECK_CONTROLLER


def test_the_deployment_runs_the_admission_check_mode(documents: list[dict[str, Any]]) -> None:
    from trainyard.cli import serve

    parser = argparse.ArgumentParser(exit_on_error=False)
    serve.configure(parser)
    container = _one(documents, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    args = parser.parse_args(container["args"][1:])
    assert (args.service, args.mode, args.launcher) == (None, "admission-check", "jobset")
    assert args.dashboard_port is None  # the dashboard shows the queue controller, which does not run here
    serve.check_mode(args)  # what `trainyard serve` refuses in this mode, it would refuse here too


def test_the_binding_names_the_deployments_service_account(documents: list[dict[str, Any]]) -> None:
    account = _one(documents, "ServiceAccount")["metadata"]
    binding = next(d for d in documents if d["metadata"]["name"] == "trainyard-admission-check" and "roleRef" in d)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]


@pytest.mark.parametrize(
    ("verb", "resource", "name"),
    [
        ("list", "admissionchecks", None),
        ("watch", "admissionchecks", None),
        ("patch", "admissionchecks/status", "trainyard-topology"),
        ("list", "workloads", None),
        ("watch", "workloads", None),
        ("patch", "workloads/status", "wl"),
        ("update", "workloads", "wl"),
        ("list", "topologies", None),
    ],
)
def test_the_rbac_lets_the_check_do_what_it_does(verb: str, resource: str, name: str | None) -> None:
    namespace = "team-a" if resource.startswith("workloads") else None
    request = Request(verb, "kueue.x-k8s.io", resource, namespace, name)
    assert allowed(granted_rules([*RBAC_FILES, CHECK_RBAC]), request), str(request)
    if resource.startswith("admissionchecks"):
        assert not allowed(granted_rules(RBAC_FILES), request), f"{request}: granted by the install already"


def test_every_rule_says_which_controller_needs_it() -> None:
    text = CHECK_RBAC.read_text()
    role = next(d for d in yaml.safe_load_all(text) if d["kind"] == "ClusterRole")
    rules_text = text.split("\nrules:\n", 1)[1].split("\n---", 1)[0]
    chunks = rules_text.split("  - apiGroups:")[:-1]  # the comment lines before each rule
    assert len(chunks) == len(role["rules"])
    for rule, chunk in zip(role["rules"], chunks, strict=True):
        comment = " ".join(line.strip().lstrip("#") for line in chunk.splitlines() if line.strip().startswith("#"))
        assert "topology check" in comment or "check activity" in comment, rule
        for verb in rule["verbs"]:
            assert verb in comment, f"{rule['resources']}: verb {verb} has no reason"
