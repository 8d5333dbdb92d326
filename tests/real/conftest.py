"""The real tier: one real cluster per test session (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, KWOK, JobSet built from their Go modules), trainyard installed on it from its
manifests and running as `trainyard serve` with its ServiceAccount's token, a namespace and a
pool of KWOK nodes with its own queues per test.

Without the built components (no Go on the machine, `make cluster-tools` not run) the whole tier
skips with one line saying so; `make test` builds them first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client as official_client
from kubernetes import config as official_config
from real_support import Pool, PoolFactory, service_kubeconfig

from sandbox.embedded import bundled_runtimes
from sandbox.real.binaries import ClusterTools
from sandbox.real.control_plane import RealCluster, RealClusterSettings
from sandbox.real.install import service_documents
from sandbox.real.service_process import ServiceProcess
from sandbox.scenario_objects import stage_documents
from simulations.scenarios import IMMEDIATE_STAGES_DIR

REQUIRED = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "jobset")


def _missing() -> list[str]:
    tools = ClusterTools.locate()
    return [binary for binary in REQUIRED if not tools.has(binary)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = _missing()
    if not missing:
        return
    real = [item for item in items if "tests/real/" in str(item.fspath)]
    if not real:
        return
    reason = f"real tier: {', '.join(missing)} not built; run `make cluster-tools` (needs Go)"
    for item in real:
        item.add_marker(pytest.mark.skip(reason=reason))
    config.stash[_SKIPPED] = (len(real), reason)


_SKIPPED = pytest.StashKey[tuple[int, str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    skipped = config.stash.get(_SKIPPED, None)
    if skipped is not None:
        terminalreporter.write_line(f"{skipped[1]} ({skipped[0]} tests skipped)")


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    workdir = tmp_path_factory.mktemp("real-cluster")
    with RealCluster(ClusterTools.locate(), RealClusterSettings(audit=True), workdir=workdir) as cluster:
        for document in [*service_documents(), *bundled_runtimes(), *stage_documents((IMMEDIATE_STAGES_DIR,))]:
            cluster.admin.apply(document)
        yield cluster


@pytest.fixture(scope="session")
def trainyard_kubeconfig(real_cluster: RealCluster) -> Path:
    """A kubeconfig with a token of trainyard's ServiceAccount (only the manifests' RBAC)."""
    return service_kubeconfig(real_cluster)


@pytest.fixture(scope="session")
def trainyard_service(real_cluster: RealCluster, trainyard_kubeconfig: Path) -> Iterator[ServiceProcess]:
    """`trainyard serve` as the Deployment runs it, its webhooks registered with the API server."""
    service = ServiceProcess(real_cluster, trainyard_kubeconfig, identity="trainyard-0").start()
    try:
        service.register_webhooks()
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="session")
def kube(real_cluster: RealCluster) -> official_client.ApiClient:
    """The official `kubernetes` client as an admin: the independent reader and writer of the tests."""
    return official_config.new_client_from_config(config_file=str(real_cluster.kubeconfig("admin")))


@pytest.fixture
def pool(
    real_cluster: RealCluster, trainyard_service: ServiceProcess, request: pytest.FixtureRequest
) -> Iterator[PoolFactory]:
    """Make node pools for this test: a namespace, KWOK nodes, a flavor, a ClusterQueue, a LocalQueue."""
    made: list[Pool] = []
    factory = PoolFactory(real_cluster, request.node.name, made)
    yield factory
    for one in made:
        one.delete()


@pytest.fixture
def cluster_log(real_cluster: RealCluster) -> Callable[[str], str]:
    """The log of a component (for assertion messages)."""
    return lambda name: real_cluster.log(name).read_text(errors="replace")[-4000:]
