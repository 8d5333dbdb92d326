"""For every Kueue and Trainer rule the webhook enforces, the CLI refuses the same object in the same words.

Each case is an object breaking one rule. The webhook's verdict comes from its handler (the
function the HTTPS server calls for ``/validate/kueue``, ``/validate/runtimes`` and
``/validate/trainjobs``); the CLI's from ``trainyard admit`` / ``render`` on a file holding the
same object. The CLI's message must be ``FILE:LINE: `` followed by the webhook's message.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainyard.cli.main import main
from webhooks.handlers import kueue as kueue_handler
from webhooks.handlers import runtimes as runtimes_handler
from webhooks.handlers import trainjobs as trainjobs_handler
from webhooks.objects import ObjectCache, load_directory
from webhooks.review import AdmissionRequest

REPO = Path(__file__).resolve().parents[2]
KUEUE = "kueue.x-k8s.io/v1beta2"
TRAINER = "trainer.kubeflow.org/v1alpha1"


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
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "default"},
            "spec": {"clusterQueue": "Bad Name"},
        },
    ),
    (
        "flavor-taint-effect",
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "gpu"},
            "spec": {"nodeTaints": [{"key": "gpu", "value": "true", "effect": "Sometimes"}]},
        },
    ),
    (
        "flavor-topology-without-labels",
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "gpu"},
            "spec": {"topologyName": "default"},
        },
    ),
    (
        "topology-hostname-not-lowest",
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "cloud.com/rack"}]},
        },
    ),
    (
        "topology-no-levels",
        {"apiVersion": KUEUE, "kind": "Topology", "metadata": {"name": "default"}, "spec": {"levels": []}},
    ),
    (
        "priority-beyond-int32",
        {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": 2**40},
    ),
    (
        "cohort-own-parent",
        {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "research"}, "spec": {"parentName": "research"}},
    ),
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


@pytest.mark.parametrize("document", [c[1] for c in KUEUE_CASES], ids=[c[0] for c in KUEUE_CASES])
def test_kueue_rule_same_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]) -> None:
    assert_kueue_same_message(tmp_path, capsys, document)


def assert_kueue_same_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]) -> None:
    """The webhook refuses the Kueue object, and `admit` refuses its file in the same words."""
    verdict = kueue_handler.validate(request(document, document["kind"]), ObjectCache())
    assert not verdict.allowed
    assert verdict.message
    path = tmp_path / "object.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    assert cli_message(tmp_path, capsys, ["admit", str(path)]) == verdict.message


def trainjob(**trainer: Any) -> dict[str, Any]:
    return {
        "apiVersion": TRAINER,
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2, **trainer}},
    }


def with_trainjob_spec(**spec: Any) -> dict[str, Any]:
    document = trainjob()
    document["spec"].update(spec)
    return document


TRAINJOB_CASES: list[tuple[str, dict[str, Any]]] = [
    ("num-nodes-zero", trainjob(numNodes=0)),
    ("num-nodes-beyond-int32", trainjob(numNodes=99999999999999999999)),
    ("num-proc-per-node-zero", trainjob(numProcPerNode=0)),
    ("num-proc-per-node-word", trainjob(numProcPerNode="many")),
    ("negative-resources", trainjob(resourcesPerNode={"requests": {"cpu": "-1"}})),
    ("name-not-rfc1035", {**trainjob(), "metadata": {"name": "1job", "namespace": "default"}}),
    ("storage-uri-without-scheme", with_trainjob_spec(initializer={"dataset": {"storageUri": "just/a/path"}})),
    ("managed-by", with_trainjob_spec(managedBy="someone-else")),
    ("active-deadline-zero", with_trainjob_spec(activeDeadlineSeconds=0)),
    ("runtime-missing", with_trainjob_spec(runtimeRef={"name": "no-such-runtime"})),
    ("runtime-kind", with_trainjob_spec(runtimeRef={"name": "x", "kind": "Deployment"})),
    ("num-nodes-not-integer", trainjob(numNodes="two")),
    ("wrong-version", {**trainjob(), "apiVersion": "trainer.kubeflow.org/v1"}),
]


@pytest.fixture(scope="module")
def runtime_cache() -> ObjectCache:
    cache = ObjectCache()
    load_directory(REPO / "manifests" / "runtimes", cache)
    return cache


@pytest.mark.parametrize("document", [c[1] for c in TRAINJOB_CASES], ids=[c[0] for c in TRAINJOB_CASES])
def test_trainer_trainjob_rule_same_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime_cache: ObjectCache, document: dict[str, Any]
) -> None:
    verdict = trainjobs_handler.validate(request(document, "TrainJob"), runtime_cache)
    assert not verdict.allowed
    assert verdict.message
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    for command in ("render", "admit"):
        message = cli_message(tmp_path, capsys, [command, str(path)])
        if document["spec"]["runtimeRef"]["name"] in ("no-such-runtime", "x"):
            # The CLI searches files, not a cluster: after the webhook's words it says where it looked.
            assert message.startswith(verdict.message + " (")
        else:
            assert message == verdict.message


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


@pytest.mark.parametrize("document", [c[1] for c in RUNTIME_CASES], ids=[c[0] for c in RUNTIME_CASES])
def test_trainer_runtime_rule_same_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]
) -> None:
    verdict = runtimes_handler.validate(request(document, document["kind"]), ObjectCache())
    assert not verdict.allowed
    assert verdict.message
    runtime_file = tmp_path / "runtime.yaml"
    runtime_file.write_text(yaml.safe_dump(document, sort_keys=False))
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(trainjob(), sort_keys=False))
    message = cli_message(tmp_path, capsys, ["render", str(job_file), "--runtime", str(runtime_file)])
    assert message == verdict.message


def test_unknown_fields_are_the_webhooks_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = cluster_queue(borowingLimit="2")
    verdict = kueue_handler.validate(request(document, "ClusterQueue"), ObjectCache())
    assert verdict.allowed
    expected = (
        'unknown field "spec.resourceGroups[0].flavors[0].resources[0].borowingLimit" (did you mean borrowingLimit?)'
    )
    assert verdict.warnings == [expected]
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    from scheduler.api.loading import read_checked

    checked = read_checked([path])
    assert len(checked.warnings) == 1
    assert checked.warnings[0].endswith(f'ClusterQueue "team-a": {expected}')
    # The unknown field is kept on the round trip.
    assert "borowingLimit" in str(checked.objects[0].obj.to_dict())
