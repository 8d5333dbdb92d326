"""The embedded API server held to kube-apiserver: the same request sequences, the answers compared.

Every difference found is either fixed in the embedded server or listed in ``KNOWN`` with why it
does not matter to trainyard (the README's table of known differences is this list). The test
fails on a difference not listed, and on a listed one that no longer occurs, so the list stays
exactly true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from differential import Answer, Difference, Sequence, Server, Step, compact_etcd, differences, run_sequence
from differential_crds import disagreements, schemas
from differential_sequences import SEQUENCES

from sandbox.apiserver.crds import CRD_DIR
from sandbox.embedded import LocalCluster, bundled_runtimes
from sandbox.real.binaries import ClusterTools
from sandbox.real.cluster import RealCluster
from sandbox.real.service_process import ServiceProcess

# "sequence/step:path" (":*": every path of the step) → why the difference does not matter to trainyard.
KNOWN: dict[str, str] = {
    "known-gaps/configmap-unknown-field:*": (
        "built-in kinds are not pruned (the embedded server has no complete schema of k8s.io/api): trainyard "
        "writes built-in objects only through typed models, which carry no unknown fields"
    ),
    "known-gaps/cel-rule:*": (
        "CEL rules (x-kubernetes-validations) are carried in the CRD copies but not evaluated: Kueue's rules are "
        "enforced by trainyard's own webhook (vkueue, scheduler.api.validation), which refuses the same objects "
        "with 422 in its own words; the embedded server still says that rules were not checked when a schema "
        "error blocks them, as the real one does"
    ),
    "known-gaps/pod-template-overrides:*": (
        "trainyard's TrainJob CRD copy keeps spec.podTemplateOverrides, which Trainer v2.3 removed for "
        "runtimePatches: trainyard's TrainJob API still offers it, and the real server drops it with a warning "
        "(moving trainyard to runtimePatches is the TrainJob API's change, outside the embedded server)"
    ),
}
_NAMESPACE_STEP = Step("namespace", "POST", "/api/v1/namespaces")


@pytest.fixture
async def embedded() -> AsyncIterator[Server]:
    async with LocalCluster(bundled_runtimes()) as cluster:
        await cluster.start_webhook()
        server = cluster.server
        assert server.certificates is not None or server.url.startswith("http:")

        async def compact() -> None:
            server.store.compact()

        async with Server("embedded", server.url, server.token or "", _ca(cluster), compact) as client:
            yield client


def _ca(cluster: LocalCluster) -> bytes:
    certificates = cluster.server.certificates
    return certificates.ca_pem if certificates is not None else b""


async def _run_both(
    sequence: Sequence, embedded: Server, real: Server, namespace: str
) -> tuple[dict[str, Answer], dict[str, Answer]]:
    for server in (embedded, real):
        await server.send(
            _NAMESPACE_STEP,
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
    return await run_sequence(embedded, sequence, namespace), await run_sequence(real, sequence, namespace)


@pytest.mark.parametrize("sequence", SEQUENCES, ids=[s.name for s in SEQUENCES])
async def test_embedded_server_answers_as_kube_apiserver(
    sequence: Sequence, embedded: Server, real_cluster: RealCluster, trainyard_service: ServiceProcess
) -> None:
    token = real_cluster.credentials.identities["admin"].token
    namespace = f"diff-{sequence.name}"[:50]

    async def compact() -> None:
        await compact_etcd(real_cluster.etcd_url)

    async with Server("real", real_cluster.url, token, real_cluster.admin_ca_pem, compact) as real:
        left, right = await _run_both(sequence, embedded, real, namespace)
    found = differences(sequence, left, right, (namespace, namespace))
    expected = {key: why for key, why in KNOWN.items() if key.startswith(f"{sequence.name}/")}
    unexpected = [d for d in found if not _listed(d, expected)]
    gone = sorted(key for key in expected if not any(_listed(d, {key: ""}) for d in found))
    assert not unexpected, _report(unexpected)
    assert not gone, f"listed in KNOWN but no longer different (remove them): {gone}"


def _listed(difference: Difference, known: dict[str, str]) -> bool:
    step = difference.key.split(":", 1)[0]
    return difference.key in known or f"{step}:*" in known


def _report(found: list[Difference]) -> str:
    rows = [f"  {d.key}\n      embedded: {d.embedded!r}\n      real:     {d.real!r}" for d in found]
    return "the embedded server answers differently from kube-apiserver:\n" + "\n".join(rows)


# Fields trainyard's CRD copies declare and the modules' CRDs do not, and why the copy keeps them.
ONLY_IN_COPIES = {
    "TrainJob.spec.podTemplateOverrides": "trainyard's TrainJob API (Trainer v2.1; v2.3 moved to runtimePatches)",
    "TrainJob.spec.labels": "trainyard's TrainJob API (Trainer v2.0/v2.1: propagated to the JobSet)",
    "TrainJob.spec.annotations": "trainyard's TrainJob API (Trainer v2.0/v2.1: propagated to the JobSet)",
    "ClusterTrainingRuntime.spec.mlPolicy.torch.numProcPerNode": "trainyard's runtimes (Trainer v2.3 moved it)",
    "ClusterTrainingRuntime.spec.mlPolicy.torch.elasticPolicy": "trainyard's runtimes (elastic torchrun)",
    "TrainingRuntime.spec.mlPolicy.torch.numProcPerNode": "trainyard's runtimes (Trainer v2.3 moved it)",
    "TrainingRuntime.spec.mlPolicy.torch.elasticPolicy": "trainyard's runtimes (elastic torchrun)",
    "ClusterQueue.spec.concurrentAdmissionPolicy": "a newer Kueue's field trainyard's model keeps as given",
    "ClusterQueue.status.fairSharing.admissionFairSharingStatus": "a newer Kueue's status field",
    "Cohort.status.fairSharing.admissionFairSharingStatus": "a newer Kueue's status field",
    "LocalQueue.spec.wallTimePolicy": "a newer Kueue's alpha wall-time quota (kept as given)",
    "LocalQueue.status.wallTimeFlavorUsage": "a newer Kueue's alpha wall-time quota's status",
}


def test_the_crd_copies_hold_objects_to_the_modules_crds_rules() -> None:
    """Every constraint, default, CEL rule and field of a copy is the module's, but for ONLY_IN_COPIES."""
    tools = ClusterTools.locate()
    upstream = schemas(path for module in ("kueue", "trainer", "jobset") for path in tools.crds(module))
    copies = schemas(sorted(CRD_DIR.rglob("*.yaml")))
    found: list[str] = []
    compared = 0
    for key, schema in sorted(copies.items()):
        if key in upstream:
            compared += 1
            found.extend(disagreements(schema, upstream[key], key[2]))
    listed = [f"{field}: only in the copy (kube-apiserver prunes it)" for field in ONLY_IN_COPIES]
    assert compared >= 11, f"only {compared} kinds compared"
    assert sorted(found) == sorted(listed), "\n".join(sorted(set(found) ^ set(listed)))
