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
from differential_crds import disagreements, has_rules, schemas
from differential_sequences import SEQUENCES

from sandbox.apiserver.crds import CRD_DIR
from sandbox.apiserver.write_checks import KINDS_WITH_CEL_RULES
from sandbox.embedded import LocalCluster, bundled_runtimes
from sandbox.real.binaries import ClusterTools
from sandbox.real.control_plane import RealCluster
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


# Where trainyard's CRD copies knowingly differ from the modules' ("path keyword") and why.
RUNTIME_API = "trainyard's TrainingRuntime API (its bundled runtimes use it)"
COPY_DEVIATIONS = {
    "TrainJob.spec.podTemplateOverrides only-in-copy": "trainyard's TrainJob API (Trainer v2.1; v2.3 has runtimePatches)",
    "TrainJob.spec.labels only-in-copy": "trainyard's TrainJob API (Trainer v2.0/v2.1: propagated to the JobSet)",
    "TrainJob.spec.annotations only-in-copy": "trainyard's TrainJob API (Trainer v2.0/v2.1: propagated to the JobSet)",
    "TrainJob.status minProperties": "manifests/crds keeps to the keywords tests/deploy allows",
    "ClusterQueue.spec.concurrentAdmissionPolicy only-in-copy": "a newer Kueue's field trainyard's model keeps as given",
    "ClusterQueue.status.fairSharing.admissionFairSharingStatus only-in-copy": "a newer Kueue's status field",
    "Cohort.status.fairSharing.admissionFairSharingStatus only-in-copy": "a newer Kueue's status field",
    "LocalQueue.spec.wallTimePolicy only-in-copy": "a newer Kueue's alpha wall-time quota (kept as given)",
    "LocalQueue.status.wallTimeFlavorUsage only-in-copy": "a newer Kueue's alpha wall-time quota's status",
    "ResourceFlavor.spec.nodeTaints[].effect enum": "stands for Kueue's CEL rule on the effect (not evaluated here)",
    "ResourceFlavor.spec.tolerations[].effect enum": "stands for Kueue's CEL rule on the effect (not evaluated here)",
    "ResourceFlavor.spec.tolerations[].operator enum": "stands for Kueue's CEL rule on the operator",
    "JobSet.spec.failurePolicy.rules[] required": "JobSet's own examples name no rule (tests/deploy validates them)",
    "JobSet.spec.failurePolicy.rules[].action enum": "newer JobSet actions JobSet's examples and trainyard use",
}
for _runtime in ("ClusterTrainingRuntime", "TrainingRuntime"):
    COPY_DEVIATIONS.update(
        {
            f"{_runtime}.spec minProperties": "manifests/crds keeps to the keywords tests/deploy allows",
            f"{_runtime}.spec.template minProperties": "manifests/crds keeps to the keywords tests/deploy allows",
            f"{_runtime}.spec.mlPolicy.torch.numProcPerNode only-in-copy": RUNTIME_API,
            f"{_runtime}.spec.mlPolicy.torch.elasticPolicy only-in-copy": RUNTIME_API,
            f"{_runtime}.spec.mlPolicy.jax maxProperties": "an empty object trainyard refuses fields in, not prunes",
            f"{_runtime}.spec.mlPolicy.xgboost maxProperties": "an empty object trainyard refuses fields in, not prunes",
            f"{_runtime}.spec.template.spec.failurePolicy.rules[] required": "the JobSet spec, as in jobsets.yaml",
        }
    )


def test_the_crd_copies_hold_objects_to_the_modules_crds_rules() -> None:
    """Every constraint, default and field of a copy is the module's, but for COPY_DEVIATIONS; and the
    kinds whose module CRDs carry CEL rules are the ones the embedded server says it did not check."""
    tools = ClusterTools.locate()
    upstream = schemas(path for module in ("kueue", "trainer", "jobset") for path in tools.crds(module))
    copies = schemas(sorted(CRD_DIR.rglob("*.yaml")))
    found: dict[str, str] = {}
    compared = [key for key in sorted(copies) if key in upstream]
    for key in compared:
        found.update(disagreements(copies[key], upstream[key], key[2]))
    assert len(compared) >= 11, f"only {len(compared)} kinds compared"
    unexplained = {place: what for place, what in found.items() if place not in COPY_DEVIATIONS}
    assert not unexplained, "\n".join(f"{place}: {what}" for place, what in sorted(unexplained.items()))
    assert not set(COPY_DEVIATIONS) - set(found), f"no longer different: {sorted(set(COPY_DEVIATIONS) - set(found))}"
    ruled = {(group, kind) for (group, _, kind), schema in upstream.items() if has_rules(schema)}
    assert {(g, k) for (g, _, k) in compared if (g, k) in ruled} == set(KINDS_WITH_CEL_RULES)
