"""The CLI-versus-webhook parity table: one object per basic rule, and how each side's verdict is read.

Shared by the parity test (``test_webhook_cli_parity``) and the rule-coverage test, which adds one
case per further rule (``kueue_rule_cases``, ``trainer_rule_cases``, ``runtime_rule_cases``).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import CohortBuilder, LocalQueueBuilder, ResourceFlavorBuilder, TopologyBuilder, trainjob
from trainyard.cli.main import main
from webhooks.handlers import kueue as kueue_handler
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest

REPO = Path(__file__).resolve().parents[2]
KUEUE = "kueue.x-k8s.io/v1beta2"


def request(document: dict[str, Any], kind: str) -> AdmissionRequest:
    metadata = document.get("metadata") or {}
    return AdmissionRequest(
        uid="u",
        group="",
        version="",
        kind=kind,
        operation="CREATE",
        namespace=metadata.get("namespace"),
        name=metadata.get("name"),
        object=document,
        old_object=None,
        dry_run=False,
    )


def cluster_queue(**quota: Any) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4", **quota}]}],
                }
            ]
        },
    }


def with_spec(document: dict[str, Any], **spec: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["spec"].update(spec)
    return changed


KUEUE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("nominal-quota-negative", cluster_queue(nominalQuota="-4")),
    ("borrowing-limit-without-cohort", cluster_queue(borrowingLimit="2")),
    ("lending-limit-above-nominal", with_spec(cluster_queue(lendingLimit="8"), cohortName="research")),
    ("cohort-name-not-dns", with_spec(cluster_queue(), cohortName="Research_Team")),
    (
        "resources-not-covered",
        with_spec(
            cluster_queue(),
            resourceGroups=[
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                }
            ],
        ),
    ),
    (
        "selector-operator",
        with_spec(cluster_queue(), namespaceSelector={"matchExpressions": [{"key": "team", "operator": "Near"}]}),
    ),
    ("queueing-strategy-enum", with_spec(cluster_queue(), queueingStrategy="Random")),
    ("fair-sharing-weight-negative", with_spec(cluster_queue(), fairSharing={"weight": "-1"})),
    (
        "borrow-within-cohort-needs-reclaim",
        with_spec(
            cluster_queue(),
            preemption={"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}},
        ),
    ),
    ("name-not-dns", {**cluster_queue(), "metadata": {"name": "Team_A"}}),
    (
        "local-queue-cluster-queue-name",
        LocalQueueBuilder("q").cluster_queue("Bad Name").doc(),
    ),
    (
        "flavor-taint-effect",
        ResourceFlavorBuilder("gpu").taint("gpu", effect="Sometimes", value="true").doc(),
    ),
    (
        "flavor-topology-without-labels",
        ResourceFlavorBuilder("gpu").topology("default").doc(),
    ),
    (
        "topology-hostname-not-lowest",
        TopologyBuilder("default", "kubernetes.io/hostname", "cloud.com/rack").doc(),
    ),
    ("topology-no-levels", TopologyBuilder("default").doc()),
    (
        "priority-beyond-int32",
        {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": 2**40},
    ),
    ("cohort-own-parent", CohortBuilder("research").parent("research").doc()),
    ("wrong-version", {**cluster_queue(), "apiVersion": "kueue.x-k8s.io/v1"}),
]


def cli_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    refusal = next(line for line in err.splitlines() if line.startswith("trainyard "))
    match = re.match(r"trainyard \w+: (\S+?):(\d+): (.*)$", refusal)
    assert match is not None, refusal
    return match.group(3)


def assert_kueue_same_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]) -> None:
    """The webhook refuses the Kueue object, and `admit` refuses its file in the same words."""
    verdict = kueue_handler.validate(request(document, document["kind"]), ObjectCache())
    assert not verdict.allowed
    assert verdict.message
    path = tmp_path / "object.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    assert cli_message(tmp_path, capsys, ["admit", str(path)]) == verdict.message


def two_node_job(**trainer: Any) -> dict[str, Any]:
    """The parity table's TrainJob: two nodes on torch-distributed, ``trainer`` fields replaced."""
    return trainjob(nodes=2, trainer=trainer)


def with_trainjob_spec(**spec: Any) -> dict[str, Any]:
    return trainjob(nodes=2, **spec)


TRAINJOB_CASES: list[tuple[str, dict[str, Any]]] = [
    ("num-nodes-zero", two_node_job(numNodes=0)),
    ("num-nodes-beyond-int32", two_node_job(numNodes=99999999999999999999)),
    ("num-proc-per-node-zero", two_node_job(numProcPerNode=0)),
    ("num-proc-per-node-word", two_node_job(numProcPerNode="many")),
    ("negative-resources", two_node_job(resourcesPerNode={"requests": {"cpu": "-1"}})),
    ("name-not-rfc1035", trainjob("1job", nodes=2)),
    ("storage-uri-without-scheme", with_trainjob_spec(initializer={"dataset": {"storageUri": "just/a/path"}})),
    ("managed-by", with_trainjob_spec(managedBy="someone-else")),
    ("active-deadline-zero", with_trainjob_spec(activeDeadlineSeconds=0)),
    ("runtime-missing", with_trainjob_spec(runtimeRef={"name": "no-such-runtime"})),
    ("runtime-kind", with_trainjob_spec(runtimeRef={"name": "x", "kind": "Deployment"})),
    ("num-nodes-not-integer", two_node_job(numNodes="two")),
    ("wrong-version", {**two_node_job(), "apiVersion": "trainer.kubeflow.org/v1"}),
]


def runtime(**ml_policy: Any) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((REPO / "manifests" / "runtimes" / "torch_distributed.yaml").read_text())
    document["metadata"]["name"] = "torch-distributed"
    document["spec"]["mlPolicy"] = ml_policy
    return document


RUNTIME_CASES = [
    ("ml-policy-num-nodes-zero", runtime(numNodes=0, torch={})),
    ("two-ml-policies", runtime(numNodes=1, torch={}, mpi={})),
    ("mpi-implementation", runtime(numNodes=1, mpi={"mpiImplementation": "MPICH"})),
]
