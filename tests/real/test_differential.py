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
from differential_sequences import SEQUENCES

from sandbox.embedded import LocalCluster, bundled_runtimes
from sandbox.real.cluster import RealCluster
from sandbox.real.service_process import ServiceProcess

# "sequence/step:path" → why the difference does not matter to trainyard.
KNOWN: dict[str, str] = {}
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
    unexpected = [d for d in found if d.key not in expected]
    gone = sorted(set(expected) - {d.key for d in found})
    assert not unexpected, _report(unexpected)
    assert not gone, f"listed in KNOWN but no longer different (remove them): {gone}"


def _report(found: list[Difference]) -> str:
    rows = [f"  {d.key}\n      embedded: {d.embedded!r}\n      real:     {d.real!r}" for d in found]
    return "the embedded server answers differently from kube-apiserver:\n" + "\n".join(rows)
